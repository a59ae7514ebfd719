"""ggml's block bytes for Q5_0, Q5_1, Q4_K, Q5_K and Q6_K <-> integer codes and scale planes
(Q2_K, Q3_K, IQ4_NL and IQ4_XS: mlcx.quantization.ggml_low_blocks).

The layouts (as ggml writes them; rows of a matrix are independent runs of blocks):
- Q5_0 (22 B / 32 weights): f16 d, uint32 qh, 16 B qs. Weight j < 16: low nibble of qs[j],
  weight j + 16: its high nibble; the fifth bit of weight i is bit i of qh.
- Q5_1 (24 B): f16 d, f16 m, then as Q5_0.
- Q4_K (144 B / 256): f16 d, f16 dmin, 12 B of 6-bit scales and mins, 128 B qs. Sub-block s
  (32 weights) is the low (even s) or high (odd s) nibbles of qs[32 (s // 2) ..][:32].
  The scales pack as: bytes 0-3 = sc[0..3] | (sc[4..7] >> 4) << 6, bytes 4-7 the same for
  the mins, bytes 8-11 = (sc[4..7] & 15) | (mn[4..7] & 15) << 4.
- Q5_K (176 B): as Q4_K with 32 B qh before qs; the fifth bit of sub-block s, weight l is
  bit s of qh[l].
- Q6_K (210 B): 128 B ql, 64 B qh, 16 int8 scales (one per 16 weights), f16 d. Half h
  (128 weights), quarter c, weight l: low nibble of ql[64h + 32 (c % 2) + l] (c < 2) or its
  high nibble (c >= 2); the top two bits are bits 2c of qh[32h + l].
Every bit of a block is one of these fields, so decode then encode gives the bytes back.
"""

from __future__ import annotations

import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.quantization.bit_packing import or_along
from mlcx.quantization.ggml_low_blocks import (
    LOW_BYTES,
    LOW_TYPES,
    LOW_WEIGHTS,
    decode_low,
    encode_low,
)

BLOCK_BYTES = {GT.Q5_0: 22, GT.Q5_1: 24, GT.Q4_K: 144, GT.Q5_K: 176, GT.Q6_K: 210, **LOW_BYTES}
BLOCK_WEIGHTS = {GT.Q5_0: 32, GT.Q5_1: 32, GT.Q4_K: 256, GT.Q5_K: 256, GT.Q6_K: 256}
BLOCK_WEIGHTS |= LOW_WEIGHTS
KIND_OF = {GT.Q5_0: "q5_0", GT.Q5_1: "q5_1", GT.Q4_K: "q4_k", GT.Q5_K: "q5_k", GT.Q6_K: "q6_k"}
KIND_OF |= LOW_TYPES


def _f16(raw: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(raw).view(np.float16)[..., 0]


def _bytes(values: np.ndarray, count: int) -> np.ndarray:
    return np.ascontiguousarray(values).view(np.uint8).reshape(*values.shape[:-1], count)


def _bits_of(words: np.ndarray, count: int) -> np.ndarray:
    """Bits 0 .. count - 1 of little-endian byte strings [..., count / 8]."""
    return np.unpackbits(words, axis=-1, bitorder="little")[..., :count]


def _split_nibbles(qs: np.ndarray) -> np.ndarray:
    """[..., 32 * j] bytes -> [..., 2 * 32 * j]: low nibbles of each 32, then high nibbles."""
    qs = qs.reshape(*qs.shape[:-1], -1, 32)
    both = np.stack([qs & 0xF, qs >> 4], axis=-2)
    return both.reshape(*qs.shape[:-2], -1)


def _join_nibbles(codes: np.ndarray) -> np.ndarray:
    c = codes.reshape(*codes.shape[:-1], -1, 2, 32)
    return (c[..., 0, :] | (c[..., 1, :] << 4)).reshape(*codes.shape[:-1], -1).astype(np.uint8)


def _k_scales(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """12 packed bytes [..., 12] -> (sc, mn) [..., 8], 6 bits each."""
    lo_sc, lo_mn, rest = raw[..., 0:4], raw[..., 4:8], raw[..., 8:12]
    sc = np.concatenate([lo_sc & 63, (rest & 15) | ((lo_sc >> 6) << 4)], axis=-1)
    mn = np.concatenate([lo_mn & 63, (rest >> 4) | ((lo_mn >> 6) << 4)], axis=-1)
    return sc, mn


def _k_scales_bytes(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    lo_sc = (sc[..., :4] & 63) | ((sc[..., 4:] >> 4) << 6)
    lo_mn = (mn[..., :4] & 63) | ((mn[..., 4:] >> 4) << 6)
    rest = (sc[..., 4:] & 15) | ((mn[..., 4:] & 15) << 4)
    return np.concatenate([lo_sc, lo_mn, rest], axis=-1).astype(np.uint8)


def _q6_codes(ql: np.ndarray, qh: np.ndarray) -> np.ndarray:
    """[..., 128] ql and [..., 64] qh -> [..., 256] codes (6 bits)."""
    ql, qh = ql.reshape(*ql.shape[:-1], 2, 64), qh.reshape(*qh.shape[:-1], 2, 1, 32)
    low = np.concatenate([ql & 0xF, ql >> 4], axis=-1)  # [..., half, 128]
    top = (qh >> (2 * np.arange(4, dtype=np.uint8))[:, None]) & 3  # [..., half, c, 32]
    return (low | (top.reshape(low.shape) << 4)).reshape(*low.shape[:-2], 256)


def _q6_bytes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = codes.reshape(*codes.shape[:-1], 2, 4, 32)
    low = c & 0xF
    ql = np.concatenate(
        [low[..., 0, :] | (low[..., 2, :] << 4), low[..., 1, :] | (low[..., 3, :] << 4)], axis=-1
    )
    top = (c >> 4) << (2 * np.arange(4, dtype=np.uint8))[:, None]
    qh = or_along(top, axis=-2)
    lead = codes.shape[:-1]
    return ql.reshape(*lead, 128).astype(np.uint8), qh.reshape(*lead, 64).astype(np.uint8)


def decode_blocks(raw: np.ndarray, gtype: GT, name: str) -> tuple[np.ndarray, dict]:
    """uint8 [rows, blocks * block_bytes] -> (codes [rows, K] uint8, per-group planes)."""
    if gtype not in BLOCK_BYTES:
        raise ValueError(f"{name}: GGUF type {gtype.name} has no block decoder here")
    size = BLOCK_BYTES[gtype]
    if raw.ndim != 2 or raw.shape[1] % size:
        raise ValueError(
            f"{name}: {gtype.name} rows must be whole {size}-byte blocks; got shape {raw.shape}"
        )
    rows = raw.shape[0]
    b = np.ascontiguousarray(raw, dtype=np.uint8).reshape(rows, -1, size)
    if gtype in LOW_TYPES:
        codes, planes = decode_low(b, gtype)
        return codes.reshape(rows, -1), {k: v.reshape(rows, -1) for k, v in planes.items()}
    if gtype in (GT.Q5_0, GT.Q5_1):
        head = 4 if gtype == GT.Q5_1 else 2
        qh, qs = b[..., head : head + 4], b[..., head + 4 :]
        codes = np.concatenate([qs & 0xF, qs >> 4], axis=-1) | (_bits_of(qh, 32) << 4)
        planes = {"scales": _f16(b[..., 0:2])}
        if gtype == GT.Q5_1:
            planes["mins"] = _f16(b[..., 2:4])
        return codes.reshape(rows, -1), planes
    if gtype == GT.Q6_K:
        codes = _q6_codes(b[..., 0:128], b[..., 128:192])
        sc = np.ascontiguousarray(b[..., 192:208]).view(np.int8)
        return codes.reshape(rows, -1), {"sc": sc.reshape(rows, -1), "d": _f16(b[..., 208:210])}
    sc, mn = _k_scales(b[..., 4:16])
    codes = _split_nibbles(b[..., -128:])
    if gtype == GT.Q5_K:
        high = _bits_of(b[..., 16:48].reshape(rows, -1, 32, 1), 8)  # [.., l, s]
        codes = codes | (np.swapaxes(high, -1, -2).reshape(codes.shape) << 4)
    planes = {"sc": sc.reshape(rows, -1), "mn": mn.reshape(rows, -1)}
    planes |= {"d": _f16(b[..., 0:2]), "dmin": _f16(b[..., 2:4])}
    return codes.reshape(rows, -1), planes


def encode_blocks(codes: np.ndarray, planes: dict, gtype: GT) -> np.ndarray:
    """Inverse of decode_blocks: uint8 [rows, blocks * block_bytes]."""
    rows = codes.shape[0]
    c = codes.astype(np.uint8).reshape(rows, -1, BLOCK_WEIGHTS[gtype])
    if gtype in LOW_TYPES:
        blocked = {k: np.asarray(v).reshape(rows, c.shape[1], -1) for k, v in planes.items()}
        return encode_low(c, blocked, gtype).reshape(rows, -1)
    if gtype in (GT.Q5_0, GT.Q5_1):
        qs = (c[..., :16] & 0xF) | ((c[..., 16:] & 0xF) << 4)
        qh = np.packbits(c >> 4, axis=-1, bitorder="little")
        heads = [_bytes(planes["scales"][..., None], 2)]
        if gtype == GT.Q5_1:
            heads.append(_bytes(planes["mins"][..., None], 2))
        return np.concatenate([*heads, qh, qs], axis=-1).reshape(rows, -1)
    blocks = c.shape[1]
    if gtype == GT.Q6_K:
        ql, qh = _q6_bytes(c)
        sc = _bytes(planes["sc"].astype(np.int8).reshape(rows, blocks, 16), 16)
        d = _bytes(planes["d"][..., None], 2)
        return np.concatenate([ql, qh, sc, d], axis=-1).reshape(rows, -1)
    sc = planes["sc"].reshape(rows, blocks, 8)
    mn = planes["mn"].reshape(rows, blocks, 8)
    parts = [_bytes(planes["d"][..., None], 2), _bytes(planes["dmin"][..., None], 2)]
    parts.append(_k_scales_bytes(sc, mn))
    if gtype == GT.Q5_K:
        high = np.swapaxes((c >> 4).reshape(rows, blocks, 8, 32), -1, -2)  # [.., l, s]
        parts.append(np.packbits(high, axis=-1, bitorder="little").reshape(rows, blocks, 32))
    parts.append(_join_nibbles(c & 0xF))
    return np.concatenate(parts, axis=-1).reshape(rows, -1)
