"""A PEFT LoRA folder: `adapter_config.json` and `adapter_model.safetensors`, whose tensors are
named after the base model's modules (`base_model.model.<module>.lora_A.weight`, [r, in];
`lora_B`, [out, r]). Each module's scale is lora_alpha / r (lora_alpha / sqrt(r) with
`use_rslora`), with `rank_pattern` / `alpha_pattern` overriding per module, as PEFT computes
it. DoRA, trained biases and fully trained modules (`modules_to_save`) are refused: they are
not low-rank pairs."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError, safe_open

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.family import Family
from mlcx.frontends.lora.adapter import (
    SLOTS,
    LoraAdapter,
    LoraPair,
    check_shape,
    slot_shape,
)

CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"
PREFIX = "base_model.model."


def _config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / CONFIG).read_text())
    except (OSError, ValueError) as err:
        raise ModelSourceError(f"{folder / CONFIG} is not readable JSON ({err})") from None
    if config.get("peft_type", "LORA") != "LORA":
        raise UnsupportedModelError(
            f"{folder} is a {config['peft_type']} adapter; mlcx runs LoRA adapters"
        )
    refused = {
        "use_dora": "DoRA adapters",
        "fan_in_fan_out": "fan_in_fan_out (Conv1D) adapters",
    }
    for key, what in refused.items():
        if config.get(key):
            raise UnsupportedModelError(f"{folder}: {what} are not supported; use plain LoRA")
    if config.get("bias", "none") != "none":
        raise UnsupportedModelError(
            f"{folder}: the adapter trains biases (bias={config['bias']!r}); mlcx runs "
            "adapters trained with bias='none'"
        )
    return config


def _pattern(patterns: dict[str, Any], module: str, default: Any) -> Any:
    """PEFT's per-module override: a key matches a module name it ends (at a dot)."""
    for key, value in (patterns or {}).items():
        if re.fullmatch(rf"(.*\.)?{key}", module):
            return value
    return default


def _scale(config: dict[str, Any], module: str, rank: int) -> float:
    alpha = float(_pattern(config.get("alpha_pattern"), module, config.get("lora_alpha", 8)))
    return alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank


def _modules(family: Family, cfg: DecoderConfig) -> dict[str, tuple[int, str]]:
    """PEFT module name -> (layer, slot) for every projection the model has."""
    names = family.hf.names
    modules = {}
    for layer in range(cfg.num_layers):
        for slot in SLOTS:
            if names.has(slot):
                modules[names.name(slot, layer).removesuffix(".weight")] = (layer, slot)
    return modules


def read_peft(folder: Path, family: Family, cfg: DecoderConfig) -> LoraAdapter:
    config = _config(folder)
    path = folder / WEIGHTS
    if not path.exists():
        raise ModelSourceError(
            f"{folder} has no {WEIGHTS}; save the adapter with safe_serialization=True"
        )
    try:
        handle = safe_open(str(path), framework="numpy")
        tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelSourceError(f"{path} is not a readable safetensors file ({err})") from None
    modules = _modules(family, cfg)
    pairs = {}
    for name in sorted(tensors):
        module, _, kind = name.removeprefix(PREFIX).rpartition(".lora_")
        if kind not in ("A.weight", "B.weight") or module not in modules:
            raise UnsupportedModelError(
                f"{path}: {name} is not a LoRA pair of an attention or MLP projection of this "
                f"{family.name} model (mlcx applies adapters to those only)"
            )
        if kind == "B.weight":
            if f"{PREFIX}{module}.lora_A.weight" not in tensors:
                raise ModelSourceError(f"{path}: {name} has no lora_A beside it")
            continue
        b = tensors.get(f"{PREFIX}{module}.lora_B.weight")
        if b is None:
            raise ModelSourceError(f"{path}: {name} has no lora_B beside it")
        a = np.asarray(tensors[name], dtype=np.float32)
        scale = _scale(config, module, a.shape[0])
        layer, slot = modules[module]
        pair = LoraPair(a, np.asarray(b, dtype=np.float32) * np.float32(scale))
        pairs[(layer, slot)] = check_shape(pair, *slot_shape(cfg, slot, layer), name)
    return LoraAdapter(folder, pairs)


def is_peft(path: Path) -> bool:
    return path.is_dir() and (path / CONFIG).exists()
