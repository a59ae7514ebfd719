"""Round-to-nearest quantization of float weights into a BlockFormat's integer parts.

Used by BlockFormat.pack (tests, and any scheme that re-quantizes into these formats). The
sub-block scales are rounded against the super-block scale as stored (f16), so the codes are
rounded against the scale that will be used.
"""

from __future__ import annotations

import numpy as np

from mlcx.quantization.block_kinds import KINDS, SUPER, BlockKind


def _f16(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16)


def _safe(values: np.ndarray) -> np.ndarray:
    return np.where(values == 0, np.float32(1.0), values).astype(np.float32)


def _simple(fmt: BlockKind, w: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Q5_0 / Q5_1: an f16 scale (and minimum) per group."""
    qmax = (1 << fmt.bits) - 1
    if fmt.affine:
        lo, hi = w.min(axis=2), w.max(axis=2)
        scale, mins = _f16((hi - lo) / qmax), _f16(lo)
        s = _safe(scale.astype(np.float32))
        q = np.rint((w - mins.astype(np.float32)[..., None]) / s[..., None])
        return np.clip(q, 0, qmax), {"scales": scale, "mins": mins}
    scale = _f16(np.abs(w).max(axis=2) / (fmt.zero_point - 1))
    q = np.rint(w / _safe(scale.astype(np.float32))[..., None]) + fmt.zero_point
    return np.clip(q, 0, qmax), {"scales": scale}


def _super(fmt: BlockKind, w: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """K-quants: integer sub-block scales (up to sc_max; signed kinds from -sc_max - 1) under
    f16 super scales."""
    n, groups, _ = w.shape
    per = SUPER // fmt.group_size
    qmax = (1 << fmt.bits) - 1
    if fmt.affine:
        lo = np.minimum(w.min(axis=2), 0)
        step = (w.max(axis=2) - lo) / qmax
        d = _f16(step.reshape(n, -1, per).max(axis=2) / fmt.sc_max)
        dmin = _f16((-lo).reshape(n, -1, per).max(axis=2) / fmt.sc_max)
        d32 = np.repeat(d.astype(np.float32), per, axis=1)
        dmin32 = np.repeat(dmin.astype(np.float32), per, axis=1)
        sc = np.clip(np.rint(step / _safe(d32)), 0, fmt.sc_max)
        mn = np.clip(np.rint(-lo / _safe(dmin32)), 0, fmt.sc_max)
        scale, minimum = d32 * sc, dmin32 * mn
        q = np.rint((w + minimum[..., None]) / _safe(scale)[..., None])
        planes = {"d": d, "dmin": dmin}
        if fmt.packed:
            planes["scm"] = (sc + 16 * mn).astype(np.uint8)
        else:
            planes |= {"sc": sc.astype(np.uint8), "mn": mn.astype(np.uint8)}
        return np.clip(q, 0, qmax), planes
    top = max(fmt.table) if fmt.table else fmt.zero_point - 1
    step = np.abs(w).max(axis=2) / top
    d = _f16(step.reshape(n, -1, per).max(axis=2) / fmt.sc_max)
    d32 = np.repeat(d.astype(np.float32), per, axis=1)
    sc = np.clip(np.rint(step / _safe(d32)), -fmt.sc_max - 1, fmt.sc_max)
    scale = _safe(d32 * sc)[..., None]
    if fmt.table:
        return _nearest(fmt.table, w / scale), {"sc": sc.astype(np.int8), "d": d}
    q = np.rint(w / scale) + fmt.zero_point
    return np.clip(q, 0, qmax), {"sc": sc.astype(np.int8), "d": d}


def _nearest(table: tuple[int, ...], x: np.ndarray) -> np.ndarray:
    """The index of the table value nearest each x."""
    values = np.array(table, np.float32)
    return np.abs(x[..., None] - values).argmin(axis=-1).astype(np.float32)


def _tabled(fmt: BlockKind, w: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """IQ4_NL: an f16 scale per group, each weight the nearest table value times it."""
    top = max(fmt.table)  # the table's positive end; its negative end reaches further
    scale = _f16(np.abs(w).max(axis=2) / top)
    return _nearest(fmt.table, w / _safe(scale.astype(np.float32))[..., None]), {"scales": scale}


def quantize_parts(kind: str, weight: np.ndarray) -> tuple[np.ndarray, dict]:
    """(unsigned codes [N, K], row-major per-group planes) for a float matrix whose rows hold
    whole blocks (BlockFormat.check_shape)."""
    fmt = KINDS[kind]
    n, k = weight.shape
    w = weight.reshape(n, -1, fmt.group_size)
    if not np.isfinite(w).all():
        raise ValueError("cannot quantize a weight holding Inf or NaN")
    quantize = _super if fmt.super_block else (_tabled if fmt.table else _simple)
    codes, planes = quantize(fmt, w)
    for name, value in planes.items():
        if value.dtype == np.float16 and not np.isfinite(value).all():
            raise ValueError(f"weights overflow the f16 {name} of {kind}; keep them unquantized")
    return codes.reshape(n, k).astype(np.uint8), planes
