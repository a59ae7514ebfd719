"""The WeightSpecs of the shared decoder for a config, from a family's weight-name table.

What the decoder holds follows from the config alone (its norms by `norm_layout`, biases, q/k
norms, a dense MLP or experts, a tied head); where each piece comes from is the table's
(mlcx.frontends.weight_names). A fused slot (`qkv`, `gate_up`) in the table is read as one
tensor, else its parts are concatenated by rows.
"""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.permute import unpermute_rows
from mlcx.frontends.weight_names import WeightNames
from mlcx.frontends.weight_spec import RowTransform, WeightSpec
from mlcx.quantization.schemes import Role


class _Layer:
    """The specs of one layer, read from `names` at layer `i` (destination `layers.i.`)."""

    def __init__(self, cfg: DecoderConfig, names: WeightNames, i: int):
        self.cfg, self.names, self.i, self.dst = cfg, names, i, f"layers.{i}."

    def src(self, *slots: str) -> tuple[str, ...]:
        return tuple(self.names.name(s, self.i) for s in slots)

    def vector(self, target: str, slot: str, transform: RowTransform | None = None):
        norm = self.names.norm_transform if slot.endswith("norm") else None
        transforms = (transform or norm,) if (transform or norm) else ()
        return WeightSpec(self.dst + target, Role.VECTOR, self.src(slot), transforms)

    def linear(self, target: str, *slots: str, transforms=()) -> WeightSpec:
        return WeightSpec(self.dst + target, Role.LINEAR, self.src(*slots), transforms)

    def specs(self) -> list[WeightSpec]:
        cfg = self.cfg
        norms = [self.vector(f"{n}.weight", n) for n in cfg.layer_norms]
        ffn = self._experts() if cfg.is_moe else self._mlp()
        return [*norms, *self._attention(), *ffn]

    def _rope_rows(self) -> tuple[RowTransform | None, ...]:
        if not self.names.rope_permuted:
            return ()
        cfg = self.cfg
        return (unpermute_rows(cfg.num_heads), unpermute_rows(cfg.num_kv_heads), None)

    def _attention(self) -> list[WeightSpec]:
        cfg, names = self.cfg, self.names
        fused = names.has("qkv")
        rope = () if fused else self._rope_rows()
        qkv = ("qkv",) if fused else ("q", "k", "v")
        specs = [self.linear("attn.qkv", *qkv, transforms=rope)]
        if cfg.qkv_bias:
            slots = ("qkv_bias",) if fused else ("q_bias", "k_bias", "v_bias")
            specs.append(
                WeightSpec(self.dst + "attn.qkv.bias", Role.VECTOR, self.src(*slots), rope)
            )
        specs.append(self.linear("attn.o", "o"))
        if cfg.o_bias:
            specs.append(self.vector("attn.o.bias", "o_bias"))
        if cfg.qk_norm:
            specs += [self.vector(f"attn.{p}_norm.weight", f"{p}_norm") for p in "qk"]
        if cfg.attn_sinks:
            specs.append(self.vector("attn.sinks", "sinks"))
        return specs

    def _mlp(self) -> list[WeightSpec]:
        gate_up = ("gate_up",) if self.names.has("gate_up") else ("gate", "up")
        return [self.linear("mlp.gate_up", *gate_up), self.linear("mlp.down", "down")]

    def _experts(self) -> list[WeightSpec]:
        names, i = self.names, self.i
        experts = range(1 if names.stacked("expert_down") else self.cfg.num_experts)

        def each(slot: str) -> tuple[str, ...]:
            return tuple(names.name(slot, i, e) for e in experts)

        return [
            # dense (VECTOR role: the activation dtype, never quantized; llama.cpp keeps the
            # router in float too: top-k choices are sensitive to rounding)
            WeightSpec(self.dst + "moe.router", Role.VECTOR, self.src("router")),
            # every expert's gate rows, then every expert's up rows (mlcx.kernels.moe's layout)
            WeightSpec(
                self.dst + "moe.gate_up", Role.LINEAR, each("expert_gate") + each("expert_up")
            ),
            WeightSpec(self.dst + "moe.down", Role.LINEAR, each("expert_down")),
        ]


def decoder_weights(cfg: DecoderConfig, names: WeightNames) -> list[WeightSpec]:
    norm = (names.norm_transform,) if names.norm_transform else ()
    specs = [WeightSpec("embed", Role.EMBEDDING, (names.name("embed"),))]
    for i in range(cfg.num_layers):
        specs += _Layer(cfg, names, i).specs()
    specs.append(WeightSpec("norm.weight", Role.VECTOR, (names.name("norm"),), norm))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, (names.name("lm_head"),)))
    return specs
