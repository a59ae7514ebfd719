"""gpt-oss's experts as its Hugging Face checkpoints store them, seen as the shared decoder's
weight table reads them: one stacked matrix per projection, rows the output features.

A checkpoint holds each layer's experts as either
- dense `mlp.experts.gate_up_proj` [E, hidden, 2I] and `down_proj` [E, I, hidden] (inputs
  first: transposed here), or
- MXFP4 (`quantization_config.quant_method == "mxfp4"`, the released checkpoints):
  `gate_up_proj_blocks` [E, 2I, hidden/32, 16] with `_scales` [E, 2I, hidden/32], and
  `down_proj_blocks` / `_scales`. These are offered as GGUF-type MXFP4 rows (the same codes
  and exponents in ggml's byte order, mlcx.quantization.mxfp4_blocks), so every scheme keeps
  them bit for bit;
and the biases `gate_up_proj_bias` [E, 2I], `down_proj_bias` [E, hidden]. gate_up's rows (and
its bias) interleave gate (even) and up (odd): the view splits them into `gate_proj` and
`up_proj`, as llama.cpp's converter does, so no kernel reads interleaved rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.errors import ModelSourceError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.tensors import SourceTensor, TensorSource
from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.mxfp4 import MXFP4

EXPERTS = "model.layers.{i}.mlp.experts."
PROJECTIONS = ("gate_proj", "up_proj", "down_proj")
_ROWS = {"gate_proj": slice(0, None, 2), "up_proj": slice(1, None, 2), "down_proj": slice(None)}


def _stored(proj: str) -> str:
    return "down_proj" if proj == "down_proj" else "gate_up_proj"


class GptOssTensors:
    """The checkpoint's tensors, and per layer `{EXPERTS}{gate,up,down}_proj.{weight,bias}`."""

    def __init__(self, ckpt: TensorSource, cfg: DecoderConfig):
        self.ckpt = ckpt
        self._stored = set(ckpt.names())
        self._views = {
            f"{EXPERTS.format(i=i)}{proj}.{kind}": (EXPERTS.format(i=i), proj, kind)
            for i in range(cfg.num_layers)
            for proj in PROJECTIONS
            for kind in ("weight", "bias")
        }

    def names(self) -> list[str]:
        return [*self.ckpt.names(), *self._views]

    def get(self, name: str) -> SourceTensor:
        if name not in self._views:
            return self.ckpt.get(name)
        base, proj, kind = self._views[name]
        if kind == "bias":
            return self._bias(name, base, proj)
        if base + _stored(proj) + "_blocks" in self._stored:
            return self._mxfp4(name, base, proj)
        if base + _stored(proj) in self._stored:
            return self._dense(name, base, proj)
        raise ModelSourceError(
            f"gpt-oss checkpoint has neither {base}{_stored(proj)} nor its MXFP4 "
            f"{base}{_stored(proj)}_blocks / _scales; the checkpoint is incomplete"
        )

    def _derived(self, name: str, source: SourceTensor, pick: Callable, shape, gtype=None):
        load = lambda: pick(source.load())  # noqa: E731
        return SourceTensor(name, shape, gtype, load, lambda: pick(source.to_float()))

    def _bias(self, name: str, base: str, proj: str) -> SourceTensor:
        source = self.ckpt.get(f"{base}{_stored(proj)}_bias")
        experts, width = source.shape
        rows = experts * (width if proj == "down_proj" else width // 2)
        pick = lambda b: np.ascontiguousarray(b[:, _ROWS[proj]]).reshape(-1)  # noqa: E731
        return self._derived(name, source, pick, (rows,))

    def _dense(self, name: str, base: str, proj: str) -> SourceTensor:
        source = self.ckpt.get(base + _stored(proj))
        experts, inputs, outputs = source.shape
        rows = experts * (outputs if proj == "down_proj" else outputs // 2)

        def pick(w: np.ndarray) -> np.ndarray:
            out_major = np.swapaxes(w, 1, 2)[:, _ROWS[proj]]
            return np.ascontiguousarray(out_major).reshape(rows, inputs)

        return self._derived(name, source, pick, (rows, inputs))

    def _mxfp4(self, name: str, base: str, proj: str) -> SourceTensor:
        stored = base + _stored(proj)
        blocks, scales = self.ckpt.get(stored + "_blocks"), self.ckpt.get(stored + "_scales")
        experts, outputs, groups, _ = blocks.shape
        rows, inputs = experts * len(range(outputs)[_ROWS[proj]]), groups * 32

        def parts() -> tuple[np.ndarray, np.ndarray]:
            return blocks.load()[:, _ROWS[proj]], scales.load()[:, _ROWS[proj]]

        def load() -> np.ndarray:
            return mb.hf_to_ggml(*parts(), name=stored)

        def to_float() -> np.ndarray:
            return MXFP4.unpack(mb.hf_planes(*parts(), name=stored))

        return SourceTensor(name, (rows, inputs), GT.MXFP4, load, to_float)


def gpt_oss_tensors(ckpt: TensorSource, cfg: DecoderConfig) -> TensorSource:
    return GptOssTensors(ckpt, cfg)
