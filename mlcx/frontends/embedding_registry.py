"""The embedding architectures mlcx can compile, and how a model folder is recognised as one.

A folder is an embedding model when its config.json names an encoder or bare-decoder
architecture listed here (BertModel, Qwen3Model), or when it is a sentence-transformers folder
(modules.json) of a family listed here (Qwen3-Embedding ships as Qwen3ForCausalLM).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tvm.relax.frontend import nn

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.bert import config as bert_config
from mlcx.frontends.bert import model as bert_model
from mlcx.frontends.bert import weights as bert_weights
from mlcx.frontends.hf.checkpoint import read_json
from mlcx.frontends.hf_config import hf_architecture
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.pooling import PoolingConfig
from mlcx.frontends.qwen3_embedding import model as qwen3_embedding_model
from mlcx.frontends.qwen3_embedding import weights as qwen3_embedding_weights
from mlcx.frontends.registry import families
from mlcx.frontends.weight_spec import WeightSpec


@dataclass(frozen=True)
class EmbeddingArchitecture:
    name: str
    hf_names: tuple[str, ...]  # config.json architectures that are always embedders
    st_names: tuple[str, ...]  # further architectures that are embedders in an ST folder
    config_from_hf: Callable[[dict[str, Any]], Any]
    build: Callable[[Any, Formats, str], nn.Module]
    hf_weights: Callable[[Any, str], list[WeightSpec]]
    anchor: str  # a tensor every checkpoint has; what precedes it is the names' prefix
    pooling: PoolingConfig  # where the folder does not say
    max_tokens: Callable[[Any], int]
    hidden_size: Callable[[Any], int]


EMBEDDERS: dict[str, EmbeddingArchitecture] = {
    a.name: a
    for a in [
        EmbeddingArchitecture(
            "bert",
            ("BertModel",),
            ("BertForMaskedLM", "BertForPreTraining", "bert"),
            bert_config.from_hf,
            bert_model.build,
            bert_weights.hf_weights,
            "embeddings.word_embeddings.weight",
            PoolingConfig("mean"),
            lambda cfg: cfg.max_positions,
            lambda cfg: cfg.hidden_size,
        ),
        EmbeddingArchitecture(
            "qwen3-embedding",
            ("Qwen3Model",),
            ("Qwen3ForCausalLM", "qwen3"),
            lambda config: families()["qwen3"].config_from_hf(config),
            qwen3_embedding_model.build,
            qwen3_embedding_weights.hf_weights,
            "embed_tokens.weight",
            PoolingConfig("last", normalize=True, matryoshka=True),
            lambda cfg: cfg.context_window,
            lambda cfg: cfg.hidden_size,
        ),
    ]
}


def embedding_architecture(folder: Path) -> EmbeddingArchitecture | None:
    """The embedding architecture of a Hugging Face folder, or None for a generative model."""
    config_file = folder / "config.json"
    if not folder.is_dir() or not config_file.exists():
        return None
    name = hf_architecture(read_json(config_file))
    sentence_transformers = (folder / "modules.json").exists()
    for arch in EMBEDDERS.values():
        if name in arch.hf_names or (sentence_transformers and name in arch.st_names):
            return arch
    generative = any(name in f.hf_names for f in families().values())
    if sentence_transformers and not generative:
        supported = ", ".join(a.name for a in EMBEDDERS.values())
        raise UnsupportedModelError(
            f"{folder} is a sentence-transformers model of architecture {name!r}; mlcx "
            f"compiles embedding models of: {supported}"
        )
    return None


def names_prefix(names: list[str], arch: EmbeddingArchitecture, folder: Path) -> str:
    """What the checkpoint puts before its tensors' names ("", "model.", "bert.")."""
    prefixes = sorted(n.removesuffix(arch.anchor) for n in names if n.endswith(arch.anchor))
    if not prefixes:
        raise UnsupportedModelError(f"{folder}: no tensor named *{arch.anchor}; not a {arch.name}")
    return prefixes[0]
