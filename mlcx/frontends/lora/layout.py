"""The shared decoder's LoRA targets (mlcx.kernels.lora_layout) for a config, and adapters
stacked into their slots as the compiled model takes them.

mlcx fuses q/k/v into one `attn.qkv` and gate/up into one `mlp.gate_up`: their delta is the
concatenation of the parts' deltas, so each part keeps its own A (its block of A's rows) and
its own B (its block of output features). An adapter of a family whose checkpoints are fused
too (one `qkv` pair) gives every part the same A and its rows of B: the same product."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.lora.adapter import LoraAdapter, LoraPair
from mlcx.kernels.lora_layout import LoraLayout, LoraSpec, LoraTarget

# target -> the slots of its parts, and the fused slot that holds them all where there is one
PARTS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "attn.qkv": (("q", "k", "v"), "qkv"),
    "attn.o": (("o",), None),
    "mlp.gate_up": (("gate", "up"), "gate_up"),
    "mlp.down": (("down",), None),
}
TARGET_OF = {slot: t for t, (parts, fused) in PARTS.items() for slot in (*parts, fused) if slot}


def _target(cfg: DecoderConfig, name: str) -> LoraTarget:
    q, kv = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    hidden, inter = cfg.hidden_size, cfg.intermediate_size
    return {
        "attn.qkv": LoraTarget(name, hidden, (q, kv, kv)),
        "attn.o": LoraTarget(name, q, (hidden,)),
        "mlp.gate_up": LoraTarget(name, hidden, (inter, inter)),
        "mlp.down": LoraTarget(name, inter, (hidden,)),
    }[name]


def lora_layout(cfg: DecoderConfig, spec: LoraSpec, dtype: str) -> LoraLayout:
    if not cfg.uniform_layers:
        raise UnsupportedModelError(
            "LoRA slots on a model whose layers differ in head geometry, KV sharing or MLP "
            "width (Gemma 4) are not supported; merge the adapter at compile time "
            "(`mlcx compile --lora`) instead"
        )
    if cfg.is_moe and any(t.startswith("mlp.") for t in spec.targets):
        raise UnsupportedModelError(
            "LoRA slots on a mixture of experts' MLP are not supported; compile with "
            "--lora-targets attn.qkv,attn.o"
        )
    targets = tuple(_target(cfg, name) for name in spec.targets)
    return LoraLayout(spec, cfg.num_layers, targets, dtype)


def check_fits(layout: LoraLayout, adapter: LoraAdapter, name: str) -> None:
    """ValueError naming what to recompile with where `adapter` cannot take a slot."""
    spec = layout.spec
    if adapter.rank > spec.rank:
        raise ValueError(
            f"the LoRA adapter {name!r} has rank {adapter.rank}, above the {spec.rank} this "
            f"artifact was compiled for; recompile with --lora-rank {adapter.rank}"
        )
    missing = sorted({TARGET_OF[slot] for slot in adapter.slots} - set(spec.targets))
    if missing:
        raise ValueError(
            f"the LoRA adapter {name!r} changes {', '.join(missing)}, which this artifact takes "
            f"no adapters for; recompile with --lora-targets {','.join(sorted(missing))} (or all)"
        )


def _place(a: np.ndarray, b: np.ndarray, part: int, rows: slice, pair: LoraPair, rank: int):
    """Write `pair` into one slot's A [parts * rank, in] and B [rank, out] as part `part`."""
    r = pair.rank
    a[part * rank : part * rank + r] = pair.a
    b[:r, rows] = pair.b.T


def stack(layout: LoraLayout, adapters: Sequence[LoraAdapter]) -> list[np.ndarray]:
    """The `lora_weights` arrays with adapters[i] in slot i + 1 (slot 0 and the rest zero)."""
    rank = layout.spec.rank
    out = [np.zeros(shape, dtype=layout.weight_dtype) for _, shape in layout.arrays()]
    for slot, adapter in enumerate(adapters, start=1):
        for layer in range(layout.num_layers):
            for target in layout.targets:
                at = layout.index(layer, target.name)
                a, b = out[at][slot], out[at + 1][slot]
                ends = np.cumsum((0, *target.parts))
                slots, fused = PARTS[target.name]
                for part, slot_name in enumerate(slots):
                    rows = slice(int(ends[part]), int(ends[part + 1]))
                    pair = adapter.pairs.get((layer, slot_name))
                    whole = adapter.pairs.get((layer, fused)) if fused else None
                    if whole is not None:
                        pair = LoraPair(whole.a, whole.b[rows])
                    if pair is not None:
                        _place(a, b, part, rows, pair, rank)
    return out
