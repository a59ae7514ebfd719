"""Gemma 4's Hugging Face checkpoints seen as the shared decoder's weight table reads them: its
experts are stacked in one parameter per projection, [experts, rows, in_features]
(`experts.gate_up_proj`, `experts.down_proj`); each is read as one matrix of their rows,
expert-major, as GGUF's stacked experts read (mlcx.frontends.gguf.checkpoint)."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.tensors import SourceTensor, TensorSource


class ExpertStacks:
    """The checkpoint's tensors, each 3-D one [experts, rows, in] as [experts * rows, in]."""

    def __init__(self, ckpt: TensorSource):
        self.ckpt = ckpt

    def names(self) -> list[str]:
        return self.ckpt.names()

    def get(self, name: str) -> SourceTensor:
        tensor = self.ckpt.get(name)
        if len(tensor.shape) != 3:
            return tensor
        experts, rows, features = tensor.shape
        shape = (experts * rows, features)
        return SourceTensor(
            name,
            shape,
            tensor.gguf_type,
            lambda: tensor.load().reshape(shape),
            lambda: tensor.to_float().reshape(shape),
        )


def gemma4_tensors(ckpt: TensorSource, cfg: DecoderConfig) -> TensorSource:
    return ExpertStacks(ckpt)
