"""`mlcx compile --lora DIR`: one adapter merged into the weights, as MLC-LLM does it: each
weight it changes is read as W + B @ A (in float) before it is converted and quantized, so the
artifact runs the adapted model at the base model's cost and without adapter inputs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.lora.read import read_adapter
from mlcx.frontends.source import ModelSource
from mlcx.frontends.tensors import SourceTensor, TensorSource


def _permute_rows(heads: int):
    """Hugging Face's q/k row order to llama.cpp's (the inverse of gguf.permute's)."""

    def apply(rows: np.ndarray) -> np.ndarray:
        n = rows.shape[0]
        return rows.reshape(heads, 2, n // heads // 2, -1).swapaxes(1, 2).reshape(rows.shape)

    return apply


class MergedTensors:
    """`base` with `deltas` added to the named tensors (float32 [out, in], the source's row
    order)."""

    def __init__(self, base: TensorSource, deltas: dict[str, np.ndarray]):
        self.base = base
        self.deltas = deltas
        self.reader = getattr(base, "reader", None)  # a GGUF source's tokenizer reads it

    def names(self) -> list[str]:
        return self.base.names()

    def get(self, name: str) -> SourceTensor:
        tensor = self.base.get(name)
        if name not in self.deltas:
            return tensor

        def merged() -> np.ndarray:
            return tensor.to_float() + self.deltas[name]

        return SourceTensor(name, tensor.shape, None, merged, merged)


def merge_adapter(source: ModelSource, adapter_path: Path | str) -> ModelSource:
    """`source` with the adapter at `adapter_path` merged into its weights."""
    adapter = read_adapter(adapter_path, source.arch, source.config)
    cfg = source.config
    gguf = source.kind == "gguf"
    names = source.arch.gguf.names if gguf and source.arch.gguf else source.arch.hf.names
    deltas = {}
    for (layer, slot), pair in adapter.pairs.items():
        if not names.has(slot):
            raise UnsupportedModelError(
                f"the adapter changes {slot!r}, which this {source.kind} checkpoint does not "
                "store as one tensor; merge it into the Hugging Face folder instead"
            )
        delta = pair.delta()
        if gguf and names.rope_permuted and slot in ("q", "k"):
            heads = cfg.num_heads if slot == "q" else cfg.layer_kv_heads(layer)
            delta = _permute_rows(heads)(delta)
        deltas[names.name(slot, layer)] = delta.astype(np.float32)
    return replace(source, tensors=MergedTensors(source.tensors, deltas))
