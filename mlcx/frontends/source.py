"""Resolve what the user named (a preset, a Hugging Face folder, a .gguf file) into a model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mlcx.errors import ModelSourceError
from mlcx.frontends import registry
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.family import Family
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.hf.checkpoint import HFCheckpoint, read_json
from mlcx.frontends.hf_config import hf_architecture
from mlcx.frontends.presets import PRESETS, ensure_preset
from mlcx.frontends.tensors import TensorSource
from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.frontends.weight_spec import WeightSpec

_HUB_ID = re.compile(r"^(hf://)?[\w.-]+/[\w.-]+$")


@dataclass
class ModelSource:
    name: str
    kind: str  # "hf" or "gguf"
    path: Path
    arch: Family
    config: DecoderConfig
    tensors: TensorSource
    weights: list[WeightSpec]
    generation_config: dict

    def tokenizer_assets(self) -> TokenizerAssets:
        if self.kind == "gguf":
            from mlcx.frontends.gguf.tokenizer import assets_from_gguf

            return assets_from_gguf(self.tensors.reader)  # type: ignore[attr-defined]
        return TokenizerAssets.from_hf_folder(self.path)


def _from_gguf(name: str, path: Path) -> ModelSource:
    ckpt = GGUFCheckpoint(path)
    arch = registry.for_gguf(ckpt.architecture, int(ckpt.arch_meta("expert_count", 0)) > 0)
    cfg = arch.config_from_gguf(ckpt)
    return ModelSource(name, "gguf", path, arch, cfg, ckpt, arch.gguf_weights(cfg), {})


def _from_hf(name: str, folder: Path) -> ModelSource:
    ckpt = HFCheckpoint(folder)
    arch = registry.for_hf(hf_architecture(ckpt.config))
    cfg = arch.config_from_hf(ckpt.config)
    gen_path = folder / "generation_config.json"
    gen = read_json(gen_path) if gen_path.exists() else {}
    tensors = arch.hf_tensors(ckpt, cfg)
    return ModelSource(name, "hf", folder, arch, cfg, tensors, arch.hf_weights(cfg), gen)


def resolve_path(model: str) -> Path:
    """The local path for a preset name or a path; clear errors for anything else."""
    if model in PRESETS:
        return ensure_preset(PRESETS[model])
    path = Path(model).expanduser()
    if path.exists():
        return path
    if _HUB_ID.match(model):
        raise ModelSourceError(
            f"{model!r} looks like a model hub id, but mlcx works offline: download the model "
            f"folder yourself and pass its path (presets: {', '.join(PRESETS)})"
        )
    raise ModelSourceError(
        f"{model!r} is neither an existing path nor a preset ({', '.join(PRESETS)})"
    )


def load_source(model: str) -> ModelSource:
    path = resolve_path(model)
    name = model if model in PRESETS else path.stem if path.is_file() else path.name
    if path.is_dir():
        return _from_hf(name, path)
    if path.suffix == ".gguf":
        source = _from_gguf(name, path)
        if model in PRESETS:
            source.generation_config = dict(PRESETS[model].sampling)
        return source
    raise ModelSourceError(
        f"{path} is a file but not a .gguf; pass a .gguf file or a Hugging Face model folder"
    )
