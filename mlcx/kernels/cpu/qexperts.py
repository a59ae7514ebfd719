"""Mixture-of-experts linears on CPU over row-tiled stacked expert weights, any token count.

The stacked weight [E * N, K] (expert-major, as GGUF's `*_exps`; a fused gate/up weight holds
every expert's gate rows, then every expert's up rows) is row-tiled like any linear's, so an
expert's output rows are whole bands. The kernel sorts the (token, slot) pairs by the expert
the router sent them to (a counting sort), then the threads share out every routed expert's
bands, each walked with that expert's rows as the token blocks of
mlcx.kernels.cpu.tiled_block: a decode step reads only the chosen experts' weights, once, in
one parallel pass; a prefill reads each expert's weights once per 8 routed rows (one GEMM per
expert). Rows are quantized once, in a
parallel pass, as the dense linears quantize theirs (int8 for long steps where asked).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import tiled_reader, vec
from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.kernels.cpu.linear_spec import split_range, token_blocks
from mlcx.kernels.cpu.rows import PlainRows, SwiGluRows, quantize_all
from mlcx.kernels.cpu.tiled_block import BandInputs, band_block
from mlcx.kernels.cpu.tiled_dots import PairDots, dots_for
from mlcx.kernels.cpu.tiled_reader import ROWS
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.kernels.lowering_marks import EXACT_BUFFERS
from mlcx.kernels.moe import check_expert_flags
from mlcx.kernels.moe_options import SILU, GluActivation
from mlcx.quantization.formats import WeightFormat

INT16_ROWS_MAX = 16  # up to this many input rows a call stays int16 (decode steps)


@dataclass(frozen=True)
class ExpertSpec:
    """out [tokens, slots, N] = for each slot j of token t, its input row times the rows of
    expert ids[t, j] of the stacked weight (any tiled format).

    per_slot: the input is [tokens, slots, K], a row per slot (a down projection); else
              [tokens, K], one row a token for every slot (gate/up)
    fused:    N = 2 * width: output c < width from the expert's gate rows, the rest from its
              up rows (the weight's second half)
    swiglu:   (per_slot) the input is the gate/up output [tokens, slots, 2K] and the rows are
              glu(gate, up) (silu(gate) * up by default), computed as they are quantized
    bias:     a float32 `bias` [experts * N] follows the weight planes, a value per stacked
              weight row, added to each output
    """

    fmt: WeightFormat
    experts: int
    slots: int
    in_features: int
    out_features: int
    per_slot: bool = False
    fused: bool = False
    swiglu: bool = False
    bias: bool = False
    glu: GluActivation = SILU

    def __post_init__(self) -> None:
        check_expert_flags(self)
        width = self.out_features // 2 if self.fused else self.out_features
        if self.in_features % CHUNK or width % ROWS:
            raise ValueError(
                f"expert linears need inputs divisible by {CHUNK} and outputs by {ROWS} "
                f"(per half when fused), not {self.in_features} -> {self.out_features}"
            )

    @property
    def source(self) -> PlainRows | SwiGluRows:
        if self.swiglu:
            return SwiGluRows(self.in_features, self.glu)
        return PlainRows(self.in_features)

    @property
    def input_name(self) -> str:
        return self.source.inputs(1)[0][0]

    @property
    def input_width(self) -> int:
        return self.source.inputs(1)[0][1][1]

    @property
    def weight_rows(self) -> int:
        return self.experts * self.out_features

    @property
    def name(self) -> str:
        kind = "down" if self.per_slot else ("gate_up" if self.fused else "up")
        kind += ("_swiglu" + self.glu.tag if self.swiglu else "") + ("_bias" if self.bias else "")
        fmt = self.fmt.name.replace("-", "_")
        return f"cpu_experts_{kind}_{fmt}_{self.experts}x{self.in_features}x{self.out_features}"

    def weight_band(self, expert, band):
        """The weight band holding output band `band` of `expert`."""
        if not self.fused:
            return expert * (self.out_features // ROWS) + band
        half = self.out_features // 2 // ROWS
        up = self.experts * half - half  # from an expert's gate band to its up band
        return expert * half + band + T.Select(band < half, 0, up)


def _params(spec: ExpertSpec):
    tokens = tirx.Var("tokens", "int64")
    bufs = {}

    def param(name, shape, dtype):
        bufs[name] = T.match_buffer(T.arg(name, T.handle()), shape, dtype)

    k, slots, width = spec.in_features, spec.slots, spec.input_width
    shape = (tokens, slots, width) if spec.per_slot else (tokens, width)
    param(spec.input_name, shape, "float32")
    param("ids", (tokens, slots), "int32")
    for suffix, (shape, dtype) in spec.fmt.param_specs(spec.weight_rows, k).items():
        param(suffix, shape, dtype)
    if spec.bias:
        param("bias", (spec.weight_rows,), "float32")
    param("out", (tokens, slots, spec.out_features), "float32")
    return tokens, bufs


def _group(ids, pairs, experts: int, sel, start, active, count) -> None:
    """A counting sort of the (token, slot) pairs by expert: expert e's pairs are
    sel[start[e] : start[e + 1]], in order; active[: count[0]] the experts with any."""
    zero = tirx.const(0, "int32")
    cursor = T.alloc_buffer((experts,), "int32")
    with T.serial(0, experts + 1) as e:
        T.buffer_store(start, zero, [e])
    with T.serial(0, pairs) as p:
        T.buffer_store(start, start[ids[p] + 1] + 1, [ids[p] + 1])
    T.buffer_store(count, zero, [0])
    with T.serial(0, experts) as e:
        with T.If(start[e + 1] > 0), T.Then():
            T.buffer_store(active, T.Cast("int32", e), [count[0]])
            T.buffer_store(count, count[0] + 1, [0])
        T.buffer_store(start, start[e + 1] + start[e], [e + 1])
        T.buffer_store(cursor, start[e], [e])
    with T.serial(0, pairs) as p:
        T.buffer_store(sel, T.Cast("int32", p), [cursor[ids[p]]])
        T.buffer_store(cursor, cursor[ids[p]] + 1, [ids[p]])


def _route(spec: ExpertSpec, cfg: KernelConfig, reader, dots, views, flat, tokens) -> None:
    """One parallel pass over every (routed expert, output band) pair: a decode step's few
    experts share the threads without a launch per expert."""
    pairs = tokens * spec.slots
    rows = pairs if spec.per_slot else tokens
    order = list(dots.order)
    source_bufs = {spec.input_name: flat["x"]}
    halves = reader.half_offsets
    q, words = quantize_all(spec.source, source_bufs, rows, cfg.threads, dots.bits, order, halves)
    inputs = BandInputs(reader, dots, views, q, words, spec.in_features, cfg.prefetch_bytes)
    sel = T.alloc_buffer((pairs,), "int32")
    start = T.alloc_buffer((spec.experts + 1,), "int32")
    active = T.alloc_buffer((spec.experts,), "int32")
    count = T.alloc_buffer((1,), "int32")
    _group(flat["ids"], pairs, spec.experts, sel, start, active, count)
    in_row = (lambda p: p) if spec.per_slot else (lambda p: p // spec.slots)  # noqa: E731
    bands = spec.out_features // ROWS
    work = T.bind(count[0] * bands)
    with T.parallel(0, cfg.threads) as c:
        begin, end = split_range(work, cfg.threads, c)
        with T.serial(begin, end) as w:
            e, band = T.bind(active[w // bands]), T.bind(w % bands)
            first = T.bind(start[e])

            def run(i0, size, band=band, e=e, first=first):
                def store(i, value):
                    at = [sel[first + i0 + i], vec.ramp(band * ROWS, ROWS)]
                    if spec.bias:
                        row = spec.weight_band(e, band) * ROWS
                        value = value + flat["bias"][vec.ramp(row, ROWS)]
                    T.buffer_store(flat["out"], value, at)

                gathered = [in_row(sel[first + i0 + i]) for i in range(size)]
                band_block(inputs, spec.weight_band(e, band), gathered, store)

            token_blocks(cfg.batch_tokens, start[e + 1] - first, run, exact_tail=True)


def build_expert_linear(spec: ExpertSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    reader = tiled_reader.reader_for(spec.fmt, cfg)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        tokens, bufs = _params(spec)
        views = reader.views(bufs, spec.weight_rows, spec.in_features)
        pairs, n = tokens * spec.slots, spec.out_features
        rows = pairs if spec.per_slot else tokens
        flat = {
            "x": T.decl_buffer(
                (rows, spec.input_width), "float32", data=bufs[spec.input_name].data
            ),
            "ids": T.decl_buffer((pairs,), "int32", data=bufs["ids"].data),
            "out": T.decl_buffer((pairs, n), "float32", data=bufs["out"].data),
            "bias": bufs.get("bias"),
        }
        int8 = dots_for(reader, cfg.linear_kernels is LinearKernels.INT8)
        with T.If(rows <= INT16_ROWS_MAX):
            with T.Then():
                _route(spec, cfg, reader, PairDots(), views, flat, tokens)
            with T.Else():
                _route(spec, cfg, reader, int8, views, flat, tokens)
    return ib.get()
