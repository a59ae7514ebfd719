"""The random-weight models `mlcx bench` knows by name, and their GGUF files (written once into
the mlcx cache): Llama-family shapes (mlcx.bench.workloads.random_models, Q4_0), gpt-oss
(mlcx.bench.workloads.random_gpt_oss, MXFP4 experts) and hybrids (random_hybrids, Q4_0)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mlcx.bench.workloads.random_gpt_oss import GptOssShape, write_random_gpt_oss
from mlcx.bench.workloads.random_hybrids import HYBRID_MODELS, HybridShape, write_hybrid_gguf
from mlcx.bench.workloads.random_models import RANDOM_MODELS as LLAMA_SHAPED
from mlcx.bench.workloads.random_models import LlamaShape, write_random_gguf
from mlcx.cache import cache_dir

GPT_OSS_SHAPED = {
    # gpt-oss-20b's shape: 24 layers of 32 MXFP4 experts, 4 a token (about 12 GB)
    "gpt-oss-20b-random": GptOssShape(),
    # the same layers, 4 of them (about 3 GB): for machines without the memory for 24
    "gpt-oss-20b-4l-random": GptOssShape(layers=4),
}
RANDOM_MODELS: dict[str, LlamaShape | GptOssShape | HybridShape] = {
    **LLAMA_SHAPED,
    **GPT_OSS_SHAPED,
    **HYBRID_MODELS,
}
# shape kind -> (the writer of its file, the file's weight type as its name says)
_WRITERS: dict[type, tuple[Callable[..., Path], str]] = {
    LlamaShape: (write_random_gguf, "Q4_0"),
    GptOssShape: (write_random_gpt_oss, "MXFP4"),
    HybridShape: (write_hybrid_gguf, "Q4_0"),
}


def ensure_random_gguf(name: str, say=print) -> Path:
    """The cached GGUF file of a named random model, written on first use."""
    shape = RANDOM_MODELS[name]
    write, tag = _WRITERS[type(shape)]
    path = cache_dir() / "bench" / f"{name}.{tag}.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        say(f"writing random {name} weights to {path}")
        partial = path.with_suffix(".partial")
        write(shape, partial)
        partial.rename(path)
    return path
