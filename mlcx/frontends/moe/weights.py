"""Where a mixture of experts' weights live: per-expert tensors in a Hugging Face checkpoint,
GGUF's stacked `ffn_{gate,up,down}_exps` [experts, rows, in] in a llama.cpp file.

Both become mlcx.kernels.moe's stacked layout: `moe.gate_up` is every expert's gate rows, then
every expert's up rows; `moe.down` every expert's down rows, expert-major. The attention and
norm weights are the dense family's (the Llama family's names), without its MLP.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.weights import decoder_weights
from mlcx.frontends.llama_family import hf_weights as dense_hf_weights
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.schemes import Role


@dataclass(frozen=True)
class HFExpertNames:
    """A family's names under `model.layers.N.`: `{block}.{router}.weight` and
    `{block}.experts.E.{gate|up|down}.weight`."""

    block: str = "mlp"
    router: str = "gate"
    gate: str = "gate_proj"
    up: str = "up_proj"
    down: str = "down_proj"


def _without_mlp(specs: list[WeightSpec]) -> list[WeightSpec]:
    return [s for s in specs if ".mlp." not in s.target]


def _moe(dst: str, router: str, gate_up: tuple[str, ...], down: tuple[str, ...]):
    return [
        # dense (VECTOR role: stored as the activation dtype, never quantized)
        WeightSpec(dst + "moe.router", Role.VECTOR, (router,)),
        WeightSpec(dst + "moe.gate_up", Role.LINEAR, gate_up),
        WeightSpec(dst + "moe.down", Role.LINEAR, down),
    ]


def hf_moe_weights(cfg: DecoderConfig, names: HFExpertNames) -> list[WeightSpec]:
    specs = _without_mlp(dense_hf_weights(cfg))
    experts = range(cfg.num_experts)
    for i in range(cfg.num_layers):
        block = f"model.layers.{i}.{names.block}."
        expert = [f"{block}experts.{e}." for e in experts]
        specs += _moe(
            f"layers.{i}.",
            f"{block}{names.router}.weight",
            tuple(f"{p}{names.gate}.weight" for p in expert)
            + tuple(f"{p}{names.up}.weight" for p in expert),
            tuple(f"{p}{names.down}.weight" for p in expert),
        )
    return specs


def gguf_moe_weights(cfg: DecoderConfig, rope_permuted: bool) -> list[WeightSpec]:
    specs = _without_mlp(decoder_weights(cfg, rope_permuted))
    for i in range(cfg.num_layers):
        blk = f"blk.{i}."
        specs += _moe(
            f"layers.{i}.",
            blk + "ffn_gate_inp.weight",
            (blk + "ffn_gate_exps.weight", blk + "ffn_up_exps.weight"),
            (blk + "ffn_down_exps.weight",),
        )
    return specs
