"""An embedding model's Hugging Face folder, read into what compile needs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlcx.errors import ModelSourceError
from mlcx.frontends.embedding_registry import (
    EmbeddingArchitecture,
    embedding_architecture,
    names_prefix,
)
from mlcx.frontends.hf.checkpoint import HFCheckpoint
from mlcx.frontends.pooling import PoolingConfig, read_pooling
from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.frontends.weight_spec import WeightSpec


@dataclass
class EmbeddingSource:
    name: str
    path: Path
    arch: EmbeddingArchitecture
    config: Any  # the architecture's config dataclass
    tensors: HFCheckpoint
    weights: list[WeightSpec]
    pooling: PoolingConfig

    @property
    def max_tokens(self) -> int:
        return self.arch.max_tokens(self.config)

    @property
    def hidden_size(self) -> int:
        return self.arch.hidden_size(self.config)

    def tokenizer_assets(self) -> TokenizerAssets:
        return TokenizerAssets.from_hf_folder(self.path)


def is_embedding_model(path: Path) -> bool:
    return embedding_architecture(path) is not None


def load_embedding_source(folder: Path) -> EmbeddingSource:
    arch = embedding_architecture(folder)
    if arch is None:
        raise ModelSourceError(f"{folder} is not an embedding model mlcx knows")
    ckpt = HFCheckpoint(folder)
    cfg = arch.config_from_hf(ckpt.config)
    prefix = names_prefix(ckpt.names(), arch, folder)
    pooling = read_pooling(folder, arch.pooling)
    return EmbeddingSource(
        folder.name, folder, arch, cfg, ckpt, arch.hf_weights(cfg, prefix), pooling
    )
