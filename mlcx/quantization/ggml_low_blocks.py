"""ggml's block bytes for Q2_K, Q3_K, IQ4_NL and IQ4_XS <-> integer codes and scale planes.

The layouts (as ggml writes them; rows of a matrix are independent runs of blocks):
- Q2_K (84 B / 256 weights): 16 scale bytes (sub-block s of 16 weights: sc | mn << 4, kept as
  one byte, `scm`), 64 B qs, f16 d, f16 dmin. Half h (128 weights), shift j, weight l < 32:
  bits 2j of qs[32h + l] are weight 128h + 32j + l.
- Q3_K (110 B): 32 B hmask, 64 B qs, 12 B of 6-bit scales, f16 d. The low two bits of a code
  sit in qs as Q2_K's do; its third bit is bit i of hmask[l] for weight 32i + l (ggml
  subtracts 4 where that bit is clear, so code = low | bit << 2 stands for code - 4). Scale
  s: low nibble of byte s (s < 8) or the high nibble of byte s - 8, its top two bits at bit
  2 (s // 4) of byte 8 + s % 4; it stands for scale - 32 (kept as int8 `sc`).
- IQ4_NL (18 B / 32): f16 d, 16 B of nibbles laid out as Q4_0's; a code indexes kvalues_iq4nl.
- IQ4_XS (136 B / 256): f16 d, uint16 scales_h, 4 B scales_l, 128 B qs. Sub-block s (32
  weights): nibbles as IQ4_NL in qs[16 s ..][:16]; its 6-bit scale = nibble s % 2 of
  scales_l[s // 2] | bits 2s of scales_h << 4, standing for scale - 32 (`sc`).
Every bit of a block is one of these fields, so decode then encode gives the bytes back.
"""

from __future__ import annotations

import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.quantization.bit_packing import or_along

LOW_TYPES = {GT.Q2_K: "q2_k", GT.Q3_K: "q3_k", GT.IQ4_NL: "iq4_nl", GT.IQ4_XS: "iq4_xs"}
LOW_BYTES = {GT.Q2_K: 84, GT.Q3_K: 110, GT.IQ4_NL: 18, GT.IQ4_XS: 136}
LOW_WEIGHTS = {GT.Q2_K: 256, GT.Q3_K: 256, GT.IQ4_NL: 32, GT.IQ4_XS: 256}
_SHIFT2 = (2 * np.arange(4, dtype=np.uint8))[:, None]  # [j, 1]


def _f16(raw: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(raw).view(np.float16)[..., 0]


def _bytes(values: np.ndarray, count: int) -> np.ndarray:
    return np.ascontiguousarray(values).view(np.uint8).reshape(*values.shape[:-1], count)


def _crumbs(qs: np.ndarray) -> np.ndarray:
    """[..., 64] bytes -> [..., 256] 2-bit codes in weight order."""
    qs = qs.reshape(*qs.shape[:-1], 2, 1, 32)
    return ((qs >> _SHIFT2) & 3).reshape(*qs.shape[:-3], 256)


def _crumb_bytes(codes: np.ndarray) -> np.ndarray:
    c = (codes & 3).reshape(*codes.shape[:-1], 2, 4, 32)
    return or_along(c << _SHIFT2, axis=-2).reshape(*codes.shape[:-1], 64)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """[..., 16] bytes -> [..., 32]: low nibbles, then high nibbles."""
    return np.concatenate([qs & 0xF, qs >> 4], axis=-1)


def _nibble_bytes(codes: np.ndarray) -> np.ndarray:
    return (codes[..., :16] & 0xF) | ((codes[..., 16:] & 0xF) << 4)


def _signed6(six: np.ndarray) -> np.ndarray:
    return (six.astype(np.int16) - 32).astype(np.int8)


def _q3_scales(raw: np.ndarray) -> np.ndarray:
    """[..., 12] bytes -> [..., 16] 6-bit values."""
    low = np.concatenate([raw[..., :8] & 0xF, raw[..., :8] >> 4], axis=-1)
    top = (raw[..., None, 8:12] >> _SHIFT2) & 3  # [..., s // 4, s % 4]
    return low | (top.reshape(low.shape) << 4)


def _q3_scale_bytes(six: np.ndarray) -> np.ndarray:
    low = (six[..., :8] & 0xF) | ((six[..., 8:] & 0xF) << 4)
    top = ((six >> 4) & 3).reshape(*six.shape[:-1], 4, 4) << _SHIFT2
    return np.concatenate([low, or_along(top, axis=-2)], axis=-1).astype(np.uint8)


def decode_low(b: np.ndarray, gtype: GT) -> tuple[np.ndarray, dict]:
    """Blocks [rows, blocks, bytes] -> (codes [rows, blocks, weights], per-group planes with
    one column per group of each block, still [rows, blocks, ...])."""
    if gtype == GT.IQ4_NL:
        return _nibbles(b[..., 2:18]), {"scales": _f16(b[..., 0:2])[..., None]}
    if gtype == GT.IQ4_XS:
        codes = _nibbles(b[..., 8:].reshape(*b.shape[:-1], 8, 16)).reshape(*b.shape[:-1], 256)
        scales_h = np.ascontiguousarray(b[..., 2:4]).view(np.uint16)  # [..., 1]
        high = (scales_h >> (2 * np.arange(8, dtype=np.uint16))) & 3
        low = np.stack([b[..., 4:8] & 0xF, b[..., 4:8] >> 4], axis=-1).reshape(high.shape)
        sc = _signed6(low | (high.astype(np.uint8) << 4))
        return codes, {"sc": sc, "d": _f16(b[..., 0:2])[..., None]}
    if gtype == GT.Q2_K:
        planes = {"scm": b[..., 0:16], "d": _f16(b[..., 80:82])[..., None]}
        return _crumbs(b[..., 16:80]), planes | {"dmin": _f16(b[..., 82:84])[..., None]}
    high = (b[..., None, 0:32] >> np.arange(8, dtype=np.uint8)[:, None]) & 1  # [.., i, l]
    codes = _crumbs(b[..., 32:96]) | (high.reshape(*b.shape[:-1], 256) << 2)
    sc = _signed6(_q3_scales(b[..., 96:108]))
    return codes, {"sc": sc, "d": _f16(b[..., 108:110])[..., None]}


def encode_low(c: np.ndarray, planes: dict, gtype: GT) -> np.ndarray:
    """Inverse of decode_low: codes [rows, blocks, weights], planes [rows, blocks, groups]
    -> bytes [rows, blocks, block bytes]."""
    d = _bytes(planes["d" if "d" in planes else "scales"][..., :1], 2)
    if gtype == GT.IQ4_NL:
        return np.concatenate([d, _nibble_bytes(c)], axis=-1)
    if gtype == GT.Q2_K:
        parts = [planes["scm"].astype(np.uint8), _crumb_bytes(c), d]
        return np.concatenate([*parts, _bytes(planes["dmin"][..., :1], 2)], axis=-1)
    six = (planes["sc"].astype(np.int16) + 32).astype(np.uint8)
    if gtype == GT.IQ4_XS:
        qs = _nibble_bytes(c.reshape(*c.shape[:-1], 8, 32)).reshape(*c.shape[:-1], 128)
        high = ((six >> 4) & 3).astype(np.uint16) << (2 * np.arange(8, dtype=np.uint16))
        scales_h = _bytes(or_along(high, axis=-1)[..., None], 2)
        pairs = six.reshape(*six.shape[:-1], 4, 2) & 0xF
        scales_l = pairs[..., 0] | (pairs[..., 1] << 4)
        return np.concatenate([d, scales_h, scales_l, qs], axis=-1)
    bits = ((c >> 2) & 1).reshape(*c.shape[:-1], 8, 32) << np.arange(8, dtype=np.uint8)[:, None]
    hmask = or_along(bits, axis=-2)
    return np.concatenate([hmask, _crumb_bytes(c), _q3_scale_bytes(six), d], axis=-1)
