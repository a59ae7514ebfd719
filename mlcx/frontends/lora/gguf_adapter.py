"""A llama.cpp LoRA adapter: a GGUF file with general.type "adapter", adapter.type "lora",
adapter.lora.alpha, and per projection `<weight name>.lora_a` [r, in] and `.lora_b` [out, r]
(convert_lora_to_gguf.py's output). The scale is alpha / r, or 1 where alpha is 0, as
llama.cpp takes it. Where llama.cpp reorders the q/k rows of the model's weights for its RoPE
(llama, mixtral), it reordered the rows of their lora_b alike: they are put back here."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.family import Family
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.permute import unpermute_rows
from mlcx.frontends.lora.adapter import (
    SLOTS,
    LoraAdapter,
    LoraPair,
    check_shape,
    slot_shape,
)


def _checked(ckpt: GGUFCheckpoint, family: Family) -> None:
    kind = (ckpt.meta("general.type"), ckpt.meta("adapter.type"))
    if kind != ("adapter", "lora"):
        raise ModelSourceError(
            f"{ckpt.path} is not a LoRA adapter (general.type {kind[0]!r}, adapter.type "
            f"{kind[1]!r}); convert one with llama.cpp's convert_lora_to_gguf.py"
        )
    if family.gguf is None:
        raise UnsupportedModelError(f"{family.name} models have no GGUF side for GGUF adapters")
    if ckpt.architecture != family.gguf.arch:
        raise ModelSourceError(
            f"{ckpt.path} is an adapter for a {ckpt.architecture!r} model, not this "
            f"{family.gguf.arch!r} one"
        )


def _row_order(family: Family, cfg: DecoderConfig, slot: str, layer: int):
    if family.gguf is None or not family.gguf.names.rope_permuted or slot not in ("q", "k"):
        return None
    return unpermute_rows(cfg.num_heads if slot == "q" else cfg.layer_kv_heads(layer))


def read_gguf_adapter(path: Path, family: Family, cfg: DecoderConfig) -> LoraAdapter:
    ckpt = GGUFCheckpoint(path)
    _checked(ckpt, family)
    alpha = float(ckpt.meta("adapter.lora.alpha", 0.0))
    names = family.gguf.names  # type: ignore[union-attr]  (checked)
    found = set(ckpt.names())
    pairs, used = {}, set()
    for layer in range(cfg.num_layers):
        for slot in SLOTS:
            if not names.has(slot):
                continue
            base = names.name(slot, layer)
            a_name, b_name = f"{base}.lora_a", f"{base}.lora_b"
            if a_name not in found and b_name not in found:
                continue
            if not {a_name, b_name} <= found:
                raise ModelSourceError(f"{path}: {base} has only one of lora_a and lora_b")
            a = ckpt.get(a_name).to_float()
            b = ckpt.get(b_name).to_float()
            reorder = _row_order(family, cfg, slot, layer)
            if reorder is not None:
                b = reorder(b)
            scale = alpha / a.shape[0] if alpha else 1.0
            pair = LoraPair(np.ascontiguousarray(a), np.ascontiguousarray(b) * np.float32(scale))
            pairs[(layer, slot)] = check_shape(pair, *slot_shape(cfg, slot, layer), base)
            used |= {a_name, b_name}
    if found - used:
        raise UnsupportedModelError(
            f"{path}: {sorted(found - used)[0]} is not a LoRA pair of an attention or MLP "
            f"projection of this {family.name} model (mlcx applies adapters to those only)"
        )
    return LoraAdapter(path, pairs)


def is_gguf_adapter(path: Path) -> bool:
    return path.is_file() and path.suffix == ".gguf"
