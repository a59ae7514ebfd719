"""Mixture-of-experts linears on GPU over stacked expert weights (mlcx.kernels.moe's layout) in
any format the GPU linear kernels read: out [tokens, slots, N] = each routed row (token, slot)
times the rows of the expert the router chose for it.

One PrimFunc, two kernels chosen on the host by the routed row count (pairs = tokens * slots):
- up to `gemv_max_pairs` (decode of a few sequences): the gathered GEMV, a workgroup per
  (routed row, band of output rows) as mlcx.kernels.gpu.linear's GEMV, reading the expert's rows
  through ids: a decode step reads only the chosen experts' weights;
- more (prefill, large decode batches): the grouped GEMM over the rows sorted by expert
  (mlcx.kernels.gpu.expert_sort): a workgroup takes one tile of TILE rows of one expert and a
  band of output rows, each thread a gemm_tokens x gemm_rows accumulator tile, so an expert's
  weights are read once per tile of its rows instead of once per routed row. Rows past the end
  of an expert's last tile are padding (-1): computed on a real row, never stored. The tile's
  expert is only known from memory, so the tile's work sits under a branch that differs
  between workgroups: it shares no activations through subgroup shuffles (browsers refuse
  shuffles under such control flow).
The router's weights and the sum over slots follow in the graph (mlcx.frontends.nn.moe).
"""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack
from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS, GpuConfig
from mlcx.kernels.gpu.expert_sort import ExpertSortSpec, RoutedRows, tile_count
from mlcx.kernels.gpu.linear import (
    GroupDots,
    ceildiv,
    gemv_workgroup,
    k_splits,
    launch,
    zero,
)
from mlcx.kernels.gpu.weight_reader import GpuWeightReader
from mlcx.kernels.lowering_marks import EXACT_BUFFERS, TIDY
from mlcx.kernels.moe import check_expert_flags
from mlcx.kernels.moe_options import SILU, GluActivation
from mlcx.quantization.formats import WeightFormat


@dataclass(frozen=True)
class GpuExpertsSpec:
    """per_slot: the input is [tokens, slots, K'] (a down projection), else [tokens, K']
    fused:    N = 2 * width: output c < width from the expert's gate rows, the rest from its
              up rows (the stack's second half)
    swiglu:   (per_slot) the input is the gate/up output, K' = 2K, the rows glu(gate, up)
              (silu(gate) * up by default)
    bias:     a `bias` [experts * N] follows the weight planes, a value per stacked weight row,
              added to each output"""

    fmt: WeightFormat
    experts: int
    slots: int
    in_features: int
    out_features: int
    dtype: str
    per_slot: bool = False
    fused: bool = False
    swiglu: bool = False
    bias: bool = False
    glu: GluActivation = SILU

    def __post_init__(self) -> None:
        check_expert_flags(self)

    @property
    def name(self) -> str:
        kind = "down" if self.per_slot else ("gate_up" if self.fused else "up")
        kind += ("_swiglu" + self.glu.tag if self.swiglu else "") + ("_bias" if self.bias else "")
        fmt = self.fmt.name.replace("-", "_").replace("(", "_").replace(")", "")
        shape = f"{self.experts}x{self.slots}x{self.in_features}x{self.out_features}"
        return f"gpu_experts_{kind}_{fmt}_{self.dtype}_{shape}"

    @property
    def x_features(self) -> int:
        return 2 * self.in_features if self.swiglu else self.in_features

    @property
    def weight_rows(self) -> int:
        return self.experts * self.out_features

    def sort_spec(self, cfg: GpuConfig) -> ExpertSortSpec:
        return ExpertSortSpec(self.experts, self.slots, tile_rows(cfg), gemv_max_pairs(self))

    def weight_row(self, expert, c):
        """The stacked weight's row of `expert`'s output c."""
        if not self.fused:
            return expert * self.out_features + c
        width = self.out_features // 2
        gate = expert * width + c
        return tirx.Select(c < width, gate, self.experts * width + gate - width)


def tile_rows(cfg: GpuConfig) -> int:
    """Routed rows of one expert per GEMM workgroup."""
    return cfg.groups * cfg.gemm_tokens


def gemv_max_pairs(spec: GpuExpertsSpec) -> int:
    """Up to one routed row per expert on average the rows are left unsorted: grouping would
    save few weight reads and cost the sort's launches."""
    return spec.experts


def _declare(spec: GpuExpertsSpec, reader: GpuWeightReader):
    tokens = tirx.Var("tokens", "int64")
    n_order, n_tiles = tirx.Var("n_order", "int64"), tirx.Var("n_tiles", "int64")
    bufs: dict[str, tirx.Buffer] = {}

    def param(name: str, shape, dtype: str) -> tirx.Buffer:
        bufs[name] = T.match_buffer(T.arg(name, T.handle()), shape, dtype)
        return bufs[name]

    x_shape = (tokens, spec.slots, spec.x_features) if spec.per_slot else (tokens, spec.x_features)
    x = param("x", x_shape, spec.dtype)
    ids = param("ids", (tokens, spec.slots), "int32")
    param("order", (n_order,), "int32")
    param("tile_expert", (n_tiles,), "int32")
    for suffix, (shape, dtype) in reader.param_specs(spec.weight_rows).items():
        param(suffix, shape, dtype)
    if spec.bias:
        param("bias", (spec.weight_rows,), spec.dtype)
    out = param("out", (tokens, spec.slots, spec.out_features), spec.dtype)
    # activations by input row (a token's for gate/up, a routed row's for down), ids and out
    # by routed row
    bufs["x"] = RoutedRows(x, spec.slots) if spec.per_slot else x
    bufs["ids"], bufs["out"] = RoutedRows(ids, spec.slots), RoutedRows(out, spec.slots)
    return tokens, bufs


def _input_row(spec: GpuExpertsSpec, pair):
    return pair if spec.per_slot else pair // spec.slots


def _store(spec, bufs, pair, row, value, expert) -> None:
    if spec.bias:
        value = value + bufs["bias"][spec.weight_row(expert, row)].astype("float32")
    bufs["out"].store(value.astype(spec.dtype), pair, row)


def _gemv(spec, cfg: GpuConfig, reader, bufs, pairs) -> None:
    n, groups = spec.out_features, spec.in_features // reader.group
    rows_per_wg = cfg.lanes * cfg.gemv_rows
    with ExitStack() as stack:
        bx, pair, tx = launch(
            stack,
            blockIdx_x=ceildiv(n, rows_per_wg),
            blockIdx_y=pairs,
            threadIdx_x=cfg.lanes * k_splits(groups, cfg.groups),
        )
        expert = T.bind(bufs["ids"][pair])
        gemv_workgroup(
            spec,
            cfg,
            reader,
            bufs,
            (bx, tx),
            [_input_row(spec, pair)],
            lambda row, total: _store(spec, bufs, pair, row, total, expert),
            lambda row: spec.weight_row(expert, row),
        )


def _grouped(spec, cfg: GpuConfig, reader, bufs, pairs) -> None:
    n, tile = spec.out_features, tile_rows(cfg)
    rows_per_wg = cfg.lanes * cfg.gemm_rows
    plain = dataclasses.replace(cfg, subgroups=False)
    with ExitStack() as stack:
        bx, by, tx = launch(
            stack,
            blockIdx_x=ceildiv(n, rows_per_wg),
            blockIdx_y=tile_count(pairs, spec.sort_spec(cfg)),
            threadIdx_x=cfg.lanes * cfg.groups,
        )
        expert = T.bind(bufs["tile_expert"][by])
        with T.If(expert >= 0), T.Then():
            lane, ty = tx % cfg.lanes, tx // cfg.lanes
            first_row = bx * rows_per_wg + lane * cfg.gemm_rows
            rows = [
                T.bind(spec.weight_row(expert, T.min(first_row + r, n - 1)))
                for r in range(cfg.gemm_rows)
            ]
            lead = T.bind(bufs["order"][by * tile])  # a tile's first row is never padding
            first = by * tile + ty * cfg.gemm_tokens  # a thread row's rows are contiguous
            routed = [T.bind(bufs["order"][first + t]) for t in range(cfg.gemm_tokens)]
            inputs = [T.bind(_input_row(spec, T.max(p, lead))) for p in routed]
            acc = T.alloc_buffer((cfg.gemm_tokens * cfg.gemm_rows,), "float32", scope="local")
            zero(acc, cfg.gemm_tokens * cfg.gemm_rows)
            group = GroupDots(spec, reader, plain, bufs, rows, inputs, lane)
            # padding is a suffix of the tile: thread rows past the expert's last row skip the
            # work, so a tile costs about its real rows (a thread row is `lanes` lanes: a whole
            # subgroup on lavapipe, a quarter of an NVIDIA warp)
            steps = spec.in_features // reader.group
            with T.If(routed[0] >= 0), T.Then(), T.serial(0, steps) as g:
                group.run(g, acc)
            for t, pair in enumerate(routed):
                for r in range(cfg.gemm_rows):
                    with T.If(tirx.all(pair >= 0, first_row + r < n)), T.Then():
                        value = acc[t * cfg.gemm_rows + r]
                        _store(spec, bufs, pair, first_row + r, value, expert)


def build_gpu_experts(spec: GpuExpertsSpec, cfg: GpuConfig) -> tirx.PrimFunc:
    """(x, ids, order, tile_expert, weight planes..., out): order and tile_expert are the
    expert sort's outputs for these ids (read only on the grouped path)."""
    reader = GpuWeightReader(spec.fmt, spec.in_features)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({**KERNEL_ATTRS, EXACT_BUFFERS: True, TIDY: True})
        tokens, bufs = _declare(spec, reader)
        pairs = tokens * spec.slots
        with T.If(pairs <= gemv_max_pairs(spec)):
            with T.Then():
                _gemv(spec, cfg, reader, bufs, pairs)
            with T.Else():
                _grouped(spec, cfg, reader, bufs, pairs)
    return ib.get()
