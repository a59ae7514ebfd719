"""Quantization schemes: which weight format each tensor gets, and the activation dtype.

The registry `QUANTIZATIONS` feeds the CLI's `--quantization` choices. Names follow MLC-LLM's
convention `q{bits}f{activation bits}`; `gguf` keeps a GGUF file's own block formats.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum

from gguf import GGMLQuantizationType as GT

from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import DenseFormat, GroupIntFormat, WeightFormat
from mlcx.quantization.mxfp4 import MXFP4

log = logging.getLogger(__name__)


class Role(Enum):
    """What a tensor is used for; decides whether it may be quantized."""

    LINEAR = "linear"  # a matrix consumed by a matmul
    EMBEDDING = "embedding"  # token embedding (also the lm_head when tied)
    VECTOR = "vector"  # norm weights, biases: always dense in the activation dtype


# GGUF block formats mlcx computes on directly (unpacked losslessly into split planes).
GGUF_FORMATS: dict[GT, WeightFormat] = {
    GT.Q4_0: GroupIntFormat(bits=4, group_size=32, scale_dtype="float16"),
    GT.Q4_1: GroupIntFormat(bits=4, group_size=32, scale_dtype="float16", affine=True),
    GT.Q8_0: GroupIntFormat(bits=8, group_size=32, scale_dtype="float16"),
    GT.Q5_0: BlockFormat("q5_0"),
    GT.Q5_1: BlockFormat("q5_1"),
    GT.Q4_K: BlockFormat("q4_k"),
    GT.Q5_K: BlockFormat("q5_k"),
    GT.Q6_K: BlockFormat("q6_k"),
    GT.MXFP4: MXFP4,
    GT.Q2_K: BlockFormat("q2_k"),
    GT.Q3_K: BlockFormat("q3_k"),
    GT.IQ4_NL: BlockFormat("iq4_nl"),
    GT.IQ4_XS: BlockFormat("iq4_xs"),
}
GGUF_FLOAT_TYPES = {GT.F32, GT.F16, GT.BF16}


@dataclass(frozen=True)
class Quantization:
    name: str
    activation_dtype: str
    weight_format: WeightFormat | None  # None: keep the source's own formats (GGUF)
    description: str

    @property
    def keeps_source_formats(self) -> bool:
        return self.weight_format is None

    def format_for(
        self, role: Role, shape: tuple[int, ...], gguf_type: GT | None = None
    ) -> WeightFormat:
        """The storage format of one tensor; `gguf_type` is the source tensor's GGUF type."""
        dense = DenseFormat(self.activation_dtype)
        if role is Role.VECTOR or len(shape) != 2:
            return dense
        if gguf_type == GT.MXFP4:
            # weights stored in MXFP4 are the model's own, as trained (gpt-oss's experts, from
            # a GGUF or an HF checkpoint's *_blocks/*_scales): every scheme keeps their bytes
            # (4.25 bits a weight; re-quantizing could only lose) and quantizes the rest
            return MXFP4
        if self.weight_format is None:
            return self._gguf_format(gguf_type, dense)
        fmt = self.weight_format
        if isinstance(fmt, GroupIntFormat) and shape[1] % fmt.group_size:
            log.warning("tensor of shape %s is not group-aligned; stored unquantized", shape)
            return dense
        return fmt

    def _gguf_format(self, gguf_type: GT | None, dense: DenseFormat) -> WeightFormat:
        if gguf_type in GGUF_FORMATS:
            return GGUF_FORMATS[gguf_type]
        if gguf_type == GT.F16 and self.activation_dtype == "float16":
            return DenseFormat("float16")
        return dense


# Scales are stored in f16 whatever the activation dtype: the "f32"/"f16" of a scheme's name is
# its math (as in MLC-LLM's naming). An f16 scale carries 11 significant bits, far finer than a
# 4- or 8-bit step, and is the byte layout of GGUF's Q4_0/Q8_0 (so those import losslessly);
# f32 scales cost a 4-bit weight 10% more bytes per decoded token. WebGPU's f32 path reads f16
# storage through 32-bit words (mlcx.targets.webgpu_plan.storage_legalize).
Q4 = GroupIntFormat(4, 32, "float16")
Q8 = GroupIntFormat(8, 32, "float16")


def _q(name: str, act: str, fmt: WeightFormat | None, text: str) -> Quantization:
    return Quantization(name, act, fmt, text)


QUANTIZATIONS: dict[str, Quantization] = {
    q.name: q
    for q in [
        _q("q0f32", "float32", DenseFormat("float32"), "no quantization, float32"),
        _q("q0f16", "float16", DenseFormat("float16"), "no quantization, float16"),
        _q("q4f32", "float32", Q4, "4-bit, group 32, f16 scales, f32 math"),
        _q("q4f16", "float16", Q4, "4-bit, group 32, f16 scales, f16 math"),
        _q("q8f32", "float32", Q8, "8-bit, group 32, f16 scales, f32 math"),
        _q("q8f16", "float16", Q8, "8-bit, group 32, f16 scales, f16 math"),
        _q(
            "gguf",
            "float32",
            None,
            "keep the GGUF file's tensors (Q4_0/1, Q5_0/1, Q8_0, Q2_K .. Q6_K, IQ4_NL, IQ4_XS, "
            "MXFP4, F16, F32), f32 math",
        ),
        _q("gguf-f16", "float16", None, "keep the GGUF file's block formats, f16 math"),
    ]
}


def get_quantization(name: str) -> Quantization:
    try:
        return QUANTIZATIONS[name]
    except KeyError:
        choices = ", ".join(QUANTIZATIONS)
        raise ValueError(f"unknown quantization {name!r}; choose one of: {choices}") from None
