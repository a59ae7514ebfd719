"""Attention over a runtime number of image patches for CPU targets, over the whole image or
within windows: Qwen-VL's encoder (dynamic resolution; 112-pixel windows in most layers).

The windowed form takes each patch's window id (`windows` [n], as the model's window mask is
built from); the runtime lays out a window's patches next to each other, so a window is a run
of equal ids and a block of query rows meets only the keys of its windows' runs, not all n
(a 1564-patch image in 64-patch windows: 1/24 of the full scores). Each row is masked to its
own run. Work items are (head, slice of row blocks) over all cores; a block of ROWS query rows
shares each key load, takes an exact softmax per row and sums the value rows together, as
mlcx.kernels.cpu.dense_attention does for a fixed token count.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec

LANES = 16  # keys per score vector
ROWS = 8  # query rows sharing each key and value load
SLICES = 8  # row-block slices per head
ACCUMULATORS = 24  # vector registers of value sums in flight (of 32 with AVX-512)
NEG_INF = -3.0e38
MASKED = -1.0e38  # scores below this are masked keys


@dataclass(frozen=True)
class WindowShape:
    heads: int
    head_dim: int
    scale: float
    windowed: bool  # within runs of equal window ids, else over all patches

    def __post_init__(self) -> None:
        if min(self.heads, self.head_dim) < 1:
            raise ValueError(f"attention shape must be positive: {self}")

    @property
    def value_chunks(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """The head's features as (offset, lanes) vectors of 16 lanes and a narrower tail
        (72 = 4 x 16 + 8), in groups whose ROWS rows of sums fit the registers."""
        chunks, at = [], 0
        while at < self.head_dim:
            lanes = next(w for w in (16, 8, 4, 2, 1) if w <= self.head_dim - at)
            chunks.append((at, lanes))
            at += lanes
        per = ACCUMULATORS // ROWS
        return tuple(tuple(chunks[i : i + per]) for i in range(0, len(chunks), per))

    @property
    def name(self) -> str:
        kind = "window" if self.windowed else "full"
        return f"{kind}_attention_cpu_{self.heads}x{self.head_dim}"


def _runs(windows, lo, hi, n) -> None:
    """lo[i], hi[i]: the bounds of the run of equal window ids that patch i is in."""
    with T.serial(0, n) as i:
        same = T.bind(T.if_then_else(i > 0, windows[T.max(i - 1, 0)] == windows[i], False))
        T.buffer_store(lo, T.if_then_else(same, lo[T.max(i - 1, 0)], i), [i])
    with T.serial(0, n) as j:
        i = n - 1 - j
        same = T.bind(T.if_then_else(i < n - 1, windows[T.min(i + 1, n - 1)] == windows[i], False))
        T.buffer_store(hi, T.if_then_else(same, hi[T.min(i + 1, n - 1)], i + 1), [i])


def _tile(sh: WindowShape, bufs, ctx, tile, key_index) -> None:
    """Scores of the block's rows for keys base + tile * LANES + lane, masked to each row's run."""
    head, row0, n, base, scores = ctx
    acc = T.alloc_buffer((ROWS, LANES), "float32")
    for r in range(ROWS):
        T.buffer_store(acc, vec.splat(vec.f32(0.0), LANES), [r, vec.ramp(0, LANES)])
    key0 = base + tile * LANES
    with T.serial(0, sh.head_dim) as c:
        keys = T.bind(bufs["kt"][head, c, key_index(key0)])
        for r in range(ROWS):
            query = T.bind(vec.splat(bufs["q"][head, T.min(row0 + r, n - 1), c], LANES))
            T.buffer_store(acc, acc[r, vec.ramp(0, LANES)] + query * keys, [r, vec.ramp(0, LANES)])
    index = vec.ramp(key0, LANES)
    for r in range(ROWS):
        row = T.min(row0 + r, n - 1)
        lo, hi = bufs["lo"][row], bufs["hi"][row]
        inside = (index >= vec.splat(lo, LANES)) & (index < vec.splat(hi, LANES))
        score = acc[r, vec.ramp(0, LANES)] * vec.splat(vec.f32(sh.scale), LANES)
        masked = T.Select(inside, score, vec.splat(vec.f32(NEG_INF), LANES))
        T.buffer_store(scores, masked, [r, vec.ramp(tile * LANES, LANES)])


def _softmax(scores, r, tiles):
    """Row r's scores exponentiated in place (masked keys weigh exactly 0); their sum."""
    best = T.alloc_buffer((LANES,), "float32")
    total = T.alloc_buffer((LANES,), "float32")
    T.buffer_store(best, vec.splat(vec.f32(NEG_INF), LANES), [vec.ramp(0, LANES)])
    T.buffer_store(total, vec.splat(vec.f32(0.0), LANES), [vec.ramp(0, LANES)])
    with T.serial(0, tiles) as j:
        row = scores[r, vec.ramp(j * LANES, LANES)]
        T.buffer_store(best, T.max(best[vec.ramp(0, LANES)], row), [vec.ramp(0, LANES)])
    top = T.bind(vec.splat(vec.hmax(best[vec.ramp(0, LANES)], LANES), LANES))
    with T.serial(0, tiles) as j:
        row = T.bind(scores[r, vec.ramp(j * LANES, LANES)])
        kept = row > vec.splat(vec.f32(MASKED), LANES)
        weight = T.bind(T.Select(kept, vec.exp(row - top, LANES), vec.splat(vec.f32(0.0), LANES)))
        T.buffer_store(scores, weight, [r, vec.ramp(j * LANES, LANES)])
        T.buffer_store(total, total[vec.ramp(0, LANES)] + weight, [vec.ramp(0, LANES)])
    return T.bind(vec.hsum(total[vec.ramp(0, LANES)], LANES))


def _values(sh: WindowShape, bufs, ctx, first, last, totals) -> None:
    """out[row] = the weighted sum of value rows first..last-1 over the row's total weight."""
    head, row0, n, base, scores = ctx
    for chunks in sh.value_chunks:
        acc = [T.alloc_buffer((ROWS, lanes), "float32") for _, lanes in chunks]
        for buf, (_, lanes) in zip(acc, chunks, strict=True):
            for r in range(ROWS):
                T.buffer_store(buf, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(0, lanes)])
        with T.serial(first, last) as s:
            values = [T.bind(bufs["v"][head, s, vec.ramp(at, lanes)]) for at, lanes in chunks]
            for r in range(ROWS):
                weight = scores[r, s - base]
                for buf, value, (_, lanes) in zip(acc, values, chunks, strict=True):
                    update = buf[r, vec.ramp(0, lanes)] + vec.splat(weight, lanes) * value
                    T.buffer_store(buf, update, [r, vec.ramp(0, lanes)])
        for r in range(ROWS):
            with T.If(row0 + r < n), T.Then():
                inv = T.bind(vec.f32(1.0) / totals[r])
                for buf, (at, lanes) in zip(acc, chunks, strict=True):
                    out = buf[r, vec.ramp(0, lanes)] * vec.splat(inv, lanes)
                    T.buffer_store(bufs["out"], out, [head, row0 + r, vec.ramp(at, lanes)])


def _block(sh: WindowShape, bufs, head, block, n, scores) -> None:
    row0 = block * ROWS
    first = T.bind(bufs["lo"][row0])
    last = T.bind(bufs["hi"][T.min(row0 + ROWS, n) - 1])
    base = T.bind(first - first % LANES)
    tiles = T.bind((last - base + LANES - 1) // LANES)
    ctx = (head, row0, n, base, scores)
    last_key = vec.splat(n - 1, LANES)
    with T.serial(0, tiles) as tile, T.If(base + (tile + 1) * LANES <= n):
        with T.Then():
            _tile(sh, bufs, ctx, tile, lambda k: vec.ramp(k, LANES))
        with T.Else():  # the last keys: lanes past the end read the last key (masked)
            _tile(sh, bufs, ctx, tile, lambda k: T.min(vec.ramp(k, LANES), last_key))
    totals = T.alloc_buffer((ROWS,), "float32")
    for r in range(ROWS):
        T.buffer_store(totals, _softmax(scores, r, tiles), [r])
    _values(sh, bufs, ctx, first, last, totals)


def window_attention_cpu(sh: WindowShape) -> tirx.PrimFunc:
    """out [h, n, d] = softmax(q kt * scale + mask) v for q, v [h, n, d] and kt [h, d, n],
    float32, n given at run time; the mask keeps each patch's own run of window ids."""
    h, d = sh.heads, sh.head_dim
    n = tirx.Var("n", "int64")
    with IRBuilder() as ib, T.prim_func():
        T.func_name(sh.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        shapes = {"q": (h, n, d), "kt": (h, d, n), "v": (h, n, d)}
        bufs = {k: T.match_buffer(T.arg(k, T.handle()), s, "float32") for k, s in shapes.items()}
        if sh.windowed:
            windows = T.match_buffer(T.arg("windows", T.handle()), (n,), "int32")
        bufs["out"] = T.match_buffer(T.arg("out", T.handle()), (h, n, d), "float32")
        bufs["lo"] = T.alloc_buffer((n,), "int64")
        bufs["hi"] = T.alloc_buffer((n,), "int64")
        if sh.windowed:
            _runs(windows, bufs["lo"], bufs["hi"], n)
        else:
            with T.serial(0, n) as i:
                T.buffer_store(bufs["lo"], tirx.const(0, "int64"), [i])
                T.buffer_store(bufs["hi"], n, [i])
        width = n + LANES  # a block's scores: its runs' keys, from a lane-aligned start
        workspace = T.alloc_buffer((h * SLICES * ROWS * width,), "float32")
        blocks = (n + ROWS - 1) // ROWS
        with T.parallel(0, h * SLICES) as item:
            head, part = item // SLICES, item % SLICES
            scores = T.decl_buffer(
                (ROWS, width), "float32", data=workspace.data, elem_offset=item * ROWS * width
            )
            with T.serial(0, (blocks - part + SLICES - 1) // SLICES) as i:
                _block(sh, bufs, head, part + i * SLICES, n, scores)
    return ib.get()
