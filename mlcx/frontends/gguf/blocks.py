"""Lossless unpacking of GGUF blocks into mlcx's split-plane layouts: Q4_0 / Q4_1 / Q8_0 here,
the 5-bit and K-quant types through mlcx.quantization.ggml_blocks, MXFP4 through
mlcx.quantization.mxfp4_blocks.

A block covers 32 consecutive weights of a row. Q4_0: f16 scale d, 16 bytes of nibbles,
w = (q - 8) * d. Q4_1: f16 d, f16 m, 16 bytes of nibbles, w = q * d + m. Q8_0: f16 d, 32 int8,
w = q * d. Byte j of the nibbles holds weight j (low nibble) and weight j + 16 (high nibble).
The codes and scales are kept bit for bit; only their arrangement changes.
"""

from __future__ import annotations

import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.quantization import mxfp4_blocks
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import GroupIntFormat
from mlcx.quantization.ggml_blocks import decode_blocks
from mlcx.quantization.mxfp4 import Mxfp4Format

_BLOCK_BYTES = {GT.Q4_0: 18, GT.Q4_1: 20, GT.Q8_0: 34}


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """[rows, blocks, 16] bytes -> [rows, blocks, 32] codes in weight order."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=2)


def unpack_blocks(
    raw: np.ndarray,
    gguf_type: GT,
    fmt: GroupIntFormat | BlockFormat | Mxfp4Format,
    name: str = "tensor",
) -> dict[str, np.ndarray]:
    """raw uint8 [rows, blocks * block_bytes] of tensor `name` -> the params of `fmt`."""
    if isinstance(fmt, BlockFormat):
        return fmt.from_parts(*decode_blocks(raw, gguf_type, name))
    if isinstance(fmt, Mxfp4Format):
        if gguf_type != GT.MXFP4:
            raise ValueError(f"{name}: GGUF type {gguf_type.name} is not MXFP4's blocks")
        return mxfp4_blocks.from_ggml(raw, fmt, name)
    if gguf_type not in _BLOCK_BYTES:
        raise ValueError(f"{name}: GGUF type {gguf_type.name} has no lossless unpacking")
    rows = raw.shape[0]
    if raw.ndim != 2 or raw.shape[1] % _BLOCK_BYTES[gguf_type]:
        raise ValueError(
            f"{name}: {gguf_type.name} rows must be whole {_BLOCK_BYTES[gguf_type]}-byte blocks; "
            f"got shape {raw.shape}"
        )
    blocks = np.ascontiguousarray(raw).reshape(rows, -1, _BLOCK_BYTES[gguf_type])
    scale = blocks[:, :, 0:2].copy().view(np.float16)[..., 0]
    if gguf_type == GT.Q8_0:
        codes = blocks[:, :, 2:34].copy().view(np.int8).astype(np.int16) + 128
        return fmt.from_ints(codes.reshape(rows, -1), scale)
    if gguf_type == GT.Q4_0:
        return fmt.from_ints(_nibbles(blocks[:, :, 2:18]).reshape(rows, -1), scale)
    minimum = blocks[:, :, 2:4].copy().view(np.float16)[..., 0]
    return fmt.from_ints(_nibbles(blocks[:, :, 4:20]).reshape(rows, -1), scale, minimum)
