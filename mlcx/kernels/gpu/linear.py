"""GPU linear layers over quantized weights: y [tokens, N] = x [tokens, K] @ W.T (+ residual).

One PrimFunc, two kernels chosen on the host by the token count:
- GEMV (decode, up to `gemv_max_tokens` tokens): a workgroup of `lanes` x `splits` threads
  covers lanes * gemv_rows output rows; the `splits` thread rows each take a contiguous slice of
  K (whole quantization groups), and their partial sums meet in workgroup memory.
- GEMM (prefill): a workgroup covers `groups * gemm_tokens` tokens x `lanes * gemm_rows` rows;
  each thread keeps a gemm_tokens x gemm_rows tile of accumulators. Weights stay packed until
  they are multiplied: a thread reads each weight word of its rows once per K step and applies
  it to all its tokens, so a weight is read once per tile of tokens, not once per token.

In both, groups of four lanes that work on the same tokens share their activations: each lane
loads two of a step's eight features and gets the other six through subgroup shuffles
(`GpuConfig.subgroups`), so activation reads do not multiply with the rows a lane owns. Without
subgroups every lane loads all eight (a GPU's cache serves the repeats). Codes are multiplied
raw and each group's scale is applied once (see weight_reader).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS, GpuConfig
from mlcx.kernels.gpu.share import step_activations
from mlcx.kernels.gpu.weight_reader import STEP, GpuWeightReader
from mlcx.kernels.lowering_marks import EXACT_BUFFERS, TIDY
from mlcx.kernels.moe_options import SILU
from mlcx.quantization.formats import WeightFormat


@dataclass(frozen=True)
class GpuLinearSpec:
    fmt: WeightFormat
    in_features: int
    out_features: int
    dtype: str  # of x, the residual and the output
    residual: bool = False
    swiglu: bool = False  # x is [gate | up] (2 * in_features wide); the input is silu(gate) * up

    @property
    def name(self) -> str:
        fmt = self.fmt.name.replace("-", "_")
        res = "_residual" if self.residual else ""
        src = "swiglu_" if self.swiglu else ""
        return f"gpu_linear_{src}{fmt}_{self.dtype}_{self.in_features}x{self.out_features}{res}"

    @property
    def x_features(self) -> int:
        return 2 * self.in_features if self.swiglu else self.in_features


def ceildiv(a, b):
    return (a + b - 1) // b


def _declare(spec: GpuLinearSpec, reader: GpuWeightReader):
    tokens = tirx.Var("tokens", "int64")
    bufs: dict[str, tirx.Buffer] = {}

    def param(name: str, shape, dtype: str) -> None:
        bufs[name] = T.match_buffer(T.arg(name, T.handle()), shape, dtype)

    param("x", (tokens, spec.x_features), spec.dtype)
    n = spec.out_features
    for suffix, (shape, dtype) in reader.param_specs(n).items():
        param(suffix, shape, dtype)
    if spec.residual:
        param("residual", (tokens, n), spec.dtype)
    param("out", (tokens, n), spec.dtype)
    return tokens, bufs


def zero(buf, count: int) -> None:
    for i in range(count):
        T.buffer_store(buf, tirx.const(0.0, "float32"), [i])


def _store(spec: GpuLinearSpec, bufs, token, row, value) -> None:
    if spec.residual:
        value = value + bufs["residual"][token, row].astype("float32")
    T.buffer_store(bufs["out"], value.astype(spec.dtype), [token, row])


class GroupDots:
    """One quantization group of a thread's rows and tokens: raw code dot products and the
    activations' sum, scaled into the accumulators at the end (dense weights: one step, added
    as they are)."""

    def __init__(self, spec, reader, cfg, bufs, rows, tokens_at, lane):
        self.swiglu = spec.in_features if spec.swiglu else None
        self.glu = getattr(spec, "glu", SILU)  # dense linears fuse only the plain SwiGLU
        self.reader, self.cfg, self.bufs = reader, cfg, bufs
        self.rows, self.tokens_at, self.lane = rows, tokens_at, lane
        shape = len(tokens_at) * len(rows)
        self.dot = self.xsum = None  # dense weights: products go straight to the accumulators
        if reader.quantized:
            self.dot = T.alloc_buffer((shape,), "float32", scope="local")
            self.xsum = T.alloc_buffer((len(tokens_at),), "float32", scope="local")
        self.table = reader.local_table()

    def run(self, group, acc) -> None:
        if self.dot is None:
            self._steps(group, acc)
            return
        zero(self.dot, len(self.tokens_at) * len(self.rows))
        zero(self.xsum, len(self.tokens_at))
        self._steps(group, self.dot)
        self._scale(group, acc)

    def _steps(self, group, dot) -> None:
        """The group's code . x products into `dot`, and (quantized) the sums of x."""
        reader, n_row = self.reader, len(self.rows)
        steps = reader.group // STEP
        with T.serial(0, steps) as s:
            step = group * steps + s
            codes = []
            for row in self.rows:
                loaded = [T.bind(v) for v in reader.load_step(self.bufs, row, step)]
                codes.append([T.bind(c) for c in reader.codes(loaded, self.table)])
            for t, token in enumerate(self.tokens_at):
                k0 = step * STEP
                x = self.bufs["x"]
                xs = step_activations(x, token, k0, self.lane, self.cfg, self.swiglu, self.glu)
                if reader.quantized:
                    T.buffer_store(self.xsum, self.xsum[t] + tree_sum(xs), [t])
                for r in range(n_row):
                    terms = [codes[r][i] * xs[i] for i in range(STEP)]
                    at = t * n_row + r
                    T.buffer_store(dot, dot[at] + tree_sum(terms), [at])

    def _scale(self, group, acc) -> None:
        reader, n_tok, n_row = self.reader, len(self.tokens_at), len(self.rows)
        for r, row in enumerate(self.rows):
            scale, offset = reader.scale_offset(self.bufs, row, group)
            scale, offset = T.bind(scale), T.bind(offset) if offset is not None else None
            for t in range(n_tok):
                i = t * n_row + r
                value = acc[i] + scale * self.dot[i]
                if offset is not None:
                    value = value + offset * self.xsum[t]
                T.buffer_store(acc, value, [i])


def tree_sum(values):
    """A balanced sum tree (shorter dependency chains than a running sum)."""
    while len(values) > 1:
        values = [a + b for a, b in zip(values[0::2], values[1::2], strict=False)] + (
            [values[-1]] if len(values) % 2 else []
        )
    return values[0]


def launch(stack: ExitStack, **extents) -> list[tirx.Var]:
    """Enter one launch frame per (tag, extent); returns the thread variables."""
    found = []
    for tag, extent in extents.items():
        var = T.env_thread(tag.replace("_", "."))
        stack.enter_context(T.launch_thread(var, extent))
        found.append(var)
    return found


def _gemm(spec, cfg: GpuConfig, reader, bufs, tokens) -> None:
    with ExitStack() as stack:
        _gemm_body(spec, cfg, reader, bufs, tokens, stack)


def _gemm_body(spec, cfg: GpuConfig, reader, bufs, tokens, stack) -> None:
    n, k = spec.out_features, spec.in_features
    rows_per_wg, tok_per_wg = cfg.lanes * cfg.gemm_rows, cfg.groups * cfg.gemm_tokens
    bx, by, tx = launch(
        stack,
        blockIdx_x=ceildiv(n, rows_per_wg),
        blockIdx_y=ceildiv(tokens, tok_per_wg),
        threadIdx_x=cfg.lanes * cfg.groups,
    )
    lane, ty = tx % cfg.lanes, tx // cfg.lanes
    first_row = bx * rows_per_wg + lane * cfg.gemm_rows
    rows = [T.bind(T.min(first_row + r, n - 1)) for r in range(cfg.gemm_rows)]
    token_ids = [by * tok_per_wg + t * cfg.groups + ty for t in range(cfg.gemm_tokens)]
    tokens_at = [T.bind(T.min(t, tokens - 1)) for t in token_ids]
    acc = T.alloc_buffer((cfg.gemm_tokens * cfg.gemm_rows,), "float32", scope="local")
    zero(acc, cfg.gemm_tokens * cfg.gemm_rows)
    group = GroupDots(spec, reader, cfg, bufs, rows, tokens_at, lane)
    with T.serial(0, k // reader.group) as g:
        group.run(g, acc)
    for t, token in enumerate(token_ids):
        for r in range(cfg.gemm_rows):
            with T.If(tirx.all(token < tokens, first_row + r < n)), T.Then():
                _store(spec, bufs, token, first_row + r, acc[t * cfg.gemm_rows + r])


def k_splits(groups: int, most: int) -> int:
    """Thread rows sharing one GEMV row set: the largest divisor of K's groups up to `most`."""
    return next(s for s in range(min(most, groups), 0, -1) if groups % s == 0)


def _gemv(spec, cfg: GpuConfig, reader, bufs, tokens) -> None:
    with ExitStack() as stack:
        _gemv_body(spec, cfg, reader, bufs, tokens, stack)


def _gemv_body(spec, cfg: GpuConfig, reader, bufs, tokens, stack) -> None:
    n, groups = spec.out_features, spec.in_features // reader.group
    rows_per_wg = cfg.lanes * cfg.gemv_rows
    bx, by, tx = launch(
        stack,
        blockIdx_x=ceildiv(n, rows_per_wg),
        blockIdx_y=tokens,
        threadIdx_x=cfg.lanes * k_splits(groups, cfg.groups),
    )

    def store(row, total) -> None:
        _store(spec, bufs, by, row, total)

    gemv_workgroup(spec, cfg, reader, bufs, (bx, tx), [by], store)


def gemv_workgroup(spec, cfg: GpuConfig, reader, bufs, ids, inputs, store, weight_row=None):
    """One workgroup of the split-K GEMV (launched with lanes * k_splits threads): each thread
    dots `gemv_rows` weight rows (weight_row(output row); the row itself by default) with the
    input rows `inputs` over its share of the groups, the shares meet in shared memory and
    store(row, total) writes each output row once. `ids`: (blockIdx.x, threadIdx.x)."""
    bx, tx = ids
    n, groups = spec.out_features, spec.in_features // reader.group
    splits = k_splits(groups, cfg.groups)
    rows_per_wg = cfg.lanes * cfg.gemv_rows
    lane, split = tx % cfg.lanes, tx // cfg.lanes
    first_row = bx * rows_per_wg + lane * cfg.gemv_rows
    pick = weight_row or (lambda row: row)
    rows = [T.bind(pick(T.min(first_row + r, n - 1))) for r in range(cfg.gemv_rows)]
    acc = T.alloc_buffer((cfg.gemv_rows,), "float32", scope="local")
    partial = T.alloc_buffer((splits * rows_per_wg,), "float32", scope="shared")
    zero(acc, cfg.gemv_rows)
    group = GroupDots(spec, reader, cfg, bufs, rows, inputs, lane)
    per_split = groups // splits
    with T.serial(0, per_split) as g:
        group.run(split * per_split + g, acc)
    for r in range(cfg.gemv_rows):
        T.buffer_store(partial, acc[r], [split * rows_per_wg + lane * cfg.gemv_rows + r])
    T.evaluate(T.tvm_storage_sync("shared"))
    threads = cfg.lanes * splits
    with T.serial(0, ceildiv(rows_per_wg, threads)) as i:
        local = i * threads + tx
        row = bx * rows_per_wg + local
        with T.If(tirx.all(local < rows_per_wg, row < n)), T.Then():
            total = tree_sum([partial[s * rows_per_wg + local] for s in range(splits)])
            store(row, total)


def build_gpu_linear(spec: GpuLinearSpec, cfg: GpuConfig) -> tirx.PrimFunc:
    reader = GpuWeightReader(spec.fmt, spec.in_features)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({**KERNEL_ATTRS, EXACT_BUFFERS: True, TIDY: True})
        tokens, bufs = _declare(spec, reader)
        with T.If(tokens <= cfg.gemv_max_tokens):
            with T.Then():
                _gemv(spec, cfg, reader, bufs, tokens)
            with T.Else():
                _gemm(spec, cfg, reader, bufs, tokens)
    return ib.get()
