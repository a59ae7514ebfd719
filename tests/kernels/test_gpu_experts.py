"""mlcx's GPU expert kernels against numpy on this machine's wgpu adapter (lavapipe here): the
counting sort of routed rows by expert, and the expert linears over stacked weights on both
paths (the gathered GEMV for a few routed rows, the grouped GEMM over the sorted rows).

Routing is skewed on purpose: one expert gets no rows, one gets more than a tile (64 rows), so
tiles are whole, partial and padded; every output element starts as NaN and must be written."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.expert_sort import build_expert_sort, sort_shapes
from mlcx.kernels.gpu.experts import GpuExpertsSpec, build_gpu_experts, tile_rows
from mlcx.quantization.formats import DenseFormat, GroupIntFormat
from tests.support.wgpu_prim import run_prim_func

CFG = GpuConfig()
EXPERTS, SLOTS = 6, 2
Q4 = GroupIntFormat(4, 32, "float16")  # Q4_0
Q8 = GroupIntFormat(8, 32, "float16")  # Q8_0


def _routing(tokens: int, rng) -> np.ndarray:
    """ids [tokens, SLOTS]: distinct experts per token, expert 5 never, expert 0 most."""
    probs = np.array([0.45, 0.2, 0.15, 0.1, 0.1, 0.0])
    ids = np.empty((tokens, SLOTS), np.int32)
    for t in range(tokens):
        ids[t] = rng.choice(EXPERTS, SLOTS, replace=False, p=probs)
    return ids


def _sorted(ids: np.ndarray, spec: GpuExpertsSpec):
    sort = build_expert_sort(spec.sort_spec(CFG))
    outs = [np.full(s, -7, np.int32) for s in sort_shapes(ids.shape[0], spec.sort_spec(CFG))]
    return run_prim_func(sort, [ids, ids, *outs])[2:4]


def test_sort_groups_rows_by_expert_in_tiles(adapter):
    tokens = 150  # 300 routed rows: expert 0 has over a tile
    ids = _routing(tokens, np.random.default_rng(0))
    spec = GpuExpertsSpec(DenseFormat("float32"), EXPERTS, SLOTS, 32, 32, "float32")
    order, tile_expert = _sorted(ids, spec)
    tile, flat = tile_rows(CFG), ids.reshape(-1)
    want_order, want_tiles = [], []
    for e in range(EXPERTS):
        rows = np.flatnonzero(flat == e).tolist()
        tiles = -(-len(rows) // tile)
        want_order += rows + [-1] * (tiles * tile - len(rows))
        want_tiles += [e] * tiles
    assert want_tiles.count(0) == 2 and 5 not in want_tiles
    used = len(want_order)
    assert order[:used].tolist() == want_order
    assert tile_expert.tolist() == want_tiles + [-1] * (len(tile_expert) - len(want_tiles))


def _reference(x, ids, weight, spec: GpuExpertsSpec) -> np.ndarray:
    tokens = ids.shape[0]
    w = weight.astype(np.float64).reshape(EXPERTS, spec.out_features, spec.in_features)
    if spec.fused:  # the stack holds every gate row, then every up row
        half = spec.out_features // 2
        stacked = weight.astype(np.float64).reshape(2, EXPERTS, half, spec.in_features)
        w = np.concatenate([stacked[0], stacked[1]], axis=1)
    x = x.astype(np.float64)
    if spec.swiglu:
        k = spec.in_features
        x = x[..., :k] / (1 + np.exp(-x[..., :k])) * x[..., k:]
    out = np.empty((tokens, SLOTS, spec.out_features))
    for t in range(tokens):
        for j in range(SLOTS):
            row = x[t, j] if spec.per_slot else x[t]
            out[t, j] = w[ids[t, j]] @ row
    return out


CASES = [  # fmt, kind, tokens (2: the GEMV path; more: sorted and grouped)
    (Q4, "gate_up", 2),
    (Q4, "gate_up", 150),
    (Q8, "down_swiglu", 90),
    (Q8, "down", 3),
    (DenseFormat("float32"), "down", 41),
]


@pytest.mark.parametrize("fmt,kind,tokens", CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_expert_linear_matches_numpy(adapter, fmt, kind, tokens):
    rng = np.random.default_rng(tokens)
    k, n = 64, 48
    spec = GpuExpertsSpec(
        fmt, EXPERTS, SLOTS, k, n, "float32", per_slot=kind != "gate_up",
        fused=kind == "gate_up", swiglu=kind == "down_swiglu",
    )  # fmt: skip
    params = fmt.pack(rng.standard_normal((spec.weight_rows, k)).astype(np.float32))
    planes = [params[s] for s in fmt.suffixes]
    planes = [p.view(np.uint32) if p.dtype == np.int8 else p for p in planes]
    ids = _routing(tokens, rng)
    shape = (tokens, SLOTS, spec.x_features) if spec.per_slot else (tokens, k)
    x = rng.standard_normal(shape).astype(np.float32)
    order, tile_expert = _sorted(ids, spec)
    out = np.full((tokens, SLOTS, n), np.nan, np.float32)
    func = build_gpu_experts(spec, CFG)
    got = run_prim_func(func, [x, ids, order, tile_expert, *planes, out])[-1]
    want = _reference(x, ids, fmt.unpack(params), spec)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max() * np.sqrt(k)
