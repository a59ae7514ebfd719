"""Every random-weight model `mlcx bench` knows by name (Llama-family shapes, mixtures of
experts, hybrids), and its GGUF file, written once into the mlcx cache."""

from __future__ import annotations

from pathlib import Path

from mlcx.bench.workloads.random_hybrids import HYBRID_MODELS, HybridShape, write_hybrid_gguf
from mlcx.bench.workloads.random_models import RANDOM_MODELS as LLAMA_MODELS
from mlcx.bench.workloads.random_models import write_random_gguf
from mlcx.cache import cache_dir

RANDOM_MODELS = {**LLAMA_MODELS, **HYBRID_MODELS}


def ensure_random_gguf(name: str, say=print) -> Path:
    """The cached GGUF file of a named random model, written on first use."""
    path = cache_dir() / "bench" / f"{name}.Q4_0.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        say(f"writing random {name} weights to {path}")
        partial = path.with_suffix(".partial")
        shape = RANDOM_MODELS[name]
        if isinstance(shape, HybridShape):
            write_hybrid_gguf(shape, partial)
        else:
            write_random_gguf(shape, partial)
        partial.rename(path)
    return path
