"""Random LoRA adapters of a model's shapes, written as PEFT folders: the adapter bench needs
adapters, and their speed depends on their shapes (rank, projections), not on trained values.
Seeded, cached under the mlcx cache by model, rank and seed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from mlcx.cache import cache_dir
from mlcx.frontends.lora.adapter import slot_shape
from mlcx.frontends.source import load_source
from mlcx.frontends.weight_names import WeightNames

# PEFT's target modules on q, v and the MLP, the usual fine-tuning choice; a family whose
# checkpoints fuse q/k/v or gate/up (phi3) has the fused module instead
SLOTS = ("q", "v", "gate", "up", "down")
FUSED = {"q": "qkv", "v": "qkv", "gate": "gate_up", "up": "gate_up"}


def random_adapter(model: str, rank: int = 8, seed: int = 0) -> Path:
    """A PEFT folder of rank-`rank` pairs on SLOTS of every layer of `model`."""
    source = load_source(model)
    key = hashlib.sha256(f"{source.path.resolve()}:{rank}:{seed}".encode()).hexdigest()[:16]
    folder = cache_dir() / "random-lora" / f"{source.name}-r{rank}-s{seed}-{key}"
    if (folder / "adapter_model.safetensors").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    names, cfg = source.arch.hf.names, source.config
    rng = np.random.default_rng(seed)
    tensors, modules = {}, set()
    for layer in range(cfg.num_layers):
        for slot in _slots(names):
            out, features = slot_shape(cfg, slot, layer)
            module = names.name(slot, layer).removesuffix(".weight")
            modules.add(module.rsplit(".", 1)[1])
            prefix = f"base_model.model.{module}"
            tensors[f"{prefix}.lora_A.weight"] = _normal(rng, (rank, features))
            tensors[f"{prefix}.lora_B.weight"] = _normal(rng, (out, rank))
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank}
    config["target_modules"] = sorted(modules)
    (folder / "adapter_config.json").write_text(json.dumps(config))
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    return folder


def _slots(names: WeightNames) -> tuple[str, ...]:
    """SLOTS as the checkpoint names them: a fused module once, in place of its parts."""
    named = (FUSED[s] if s in FUSED and names.has(FUSED[s]) else s for s in SLOTS)
    return tuple(dict.fromkeys(named))


def _normal(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return (0.02 * rng.standard_normal(shape)).astype(np.float32)
