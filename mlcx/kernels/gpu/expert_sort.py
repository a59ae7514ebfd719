"""The routed rows of a step sorted by expert on the GPU (a counting sort; no atomics, no host
round trip), in the tile layout the grouped expert GEMMs read (mlcx.kernels.gpu.experts).

A routed row is a (token, slot) pair p = token * slots + slot; its expert is ids[p]. The sort
writes, for a tile size TILE:
- order [tiles * TILE]: expert e's rows, in increasing p, start at tile_start[e] * TILE and
  fill ceil(n_e / TILE) whole tiles, the tail padded with -1;
- tile_expert [tiles]: the expert of each tile, -1 past the last used one;
where tiles = ceil(pairs / TILE) + experts bounds the tiles any routing uses. Three kernels:
a histogram of each CHUNK of rows by expert (one thread per expert), an exclusive scan of those
counts per expert and of the experts' tile counts (one workgroup), and a scatter of each chunk
(one thread per expert writes its rows in order: stable, deterministic).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.gpu.linear import ceildiv, launch

CHUNK = 256  # rows per histogram / scatter workgroup
THREADS = 64  # threads of a sort workgroup (experts beyond it loop)


class RoutedRows:
    """A [tokens, slots, ...] buffer read by routed row p = token * slots + slot. Not a flat
    DeclBuffer view: TVM 0.27's AttachGlobalSymbol fails on a function holding one when it
    prefixes a system library's symbols (the iphone build)."""

    def __init__(self, buf: tirx.Buffer, slots: int):
        self.buf, self.slots, self.dtype = buf, slots, buf.dtype

    def index(self, p, *rest) -> list:
        return [p // self.slots, p % self.slots, *rest]

    def __getitem__(self, index):
        p, *rest = index if isinstance(index, tuple) else (index,)
        return self.buf[tuple(self.index(p, *rest))]

    def store(self, value, p, *rest) -> None:
        T.buffer_store(self.buf, value, self.index(p, *rest))


@dataclass(frozen=True)
class ExpertSortSpec:
    experts: int
    slots: int
    tile: int  # rows of one expert per GEMM tile
    gemv_max_pairs: int  # up to this many routed rows, nothing is sorted (the GEMV reads ids)

    @property
    def name(self) -> str:
        return f"gpu_expert_sort_{self.experts}x{self.slots}_t{self.tile}"


def tile_count(pairs, spec: ExpertSortSpec):
    """Tiles of the sorted layout for `pairs` routed rows (an int or a shape expression)."""
    return (pairs + spec.tile - 1) // spec.tile + spec.experts


def sort_shapes(tokens, spec: ExpertSortSpec) -> list[tuple]:
    """Shapes of the sort's outputs: order, tile_expert, and its scratch counts."""
    pairs = tokens * spec.slots
    tiles = tile_count(pairs, spec)
    return [(tiles * spec.tile,), (tiles,), (((pairs + CHUNK - 1) // CHUNK) * spec.experts,)]


def _experts(e_threads: int, experts: int, tx, body) -> None:
    """body(e) for each expert this thread owns (e = g * THREADS + tx)."""
    with T.serial(0, ceildiv(experts, e_threads)) as g:
        e = T.bind(g * e_threads + tx)
        with T.If(e < experts), T.Then():
            body(e)


def _load_chunk(ids, pairs, c, tx, chunk_ids) -> None:
    with T.serial(0, CHUNK // THREADS) as i:
        p = T.bind(c * CHUNK + i * THREADS + tx)
        value = tirx.Select(p < pairs, ids[T.min(p, pairs - 1)], tirx.const(-1, "int32"))
        T.buffer_store(chunk_ids, value, [i * THREADS + tx])
    T.evaluate(T.tvm_storage_sync("shared"))


def _histogram(spec, bufs, pairs, chunks) -> None:
    with ExitStack() as stack:
        c, tx = launch(stack, blockIdx_x=chunks, threadIdx_x=THREADS)
        chunk_ids = T.alloc_buffer((CHUNK,), "int32", scope="shared")
        n = T.alloc_buffer((1,), "int32", scope="local")
        _load_chunk(bufs["ids"], pairs, c, tx, chunk_ids)

        def count(e):
            T.buffer_store(n, tirx.const(0, "int32"), [0])
            with T.serial(0, CHUNK) as i:
                T.buffer_store(n, n[0] + T.Cast("int32", chunk_ids[i] == e), [0])
            T.buffer_store(bufs["counts"], n[0], [c * spec.experts + e])

        _experts(THREADS, spec.experts, tx, count)


def _prefix(values, upto, acc) -> tirx.PrimExpr:
    """sum(values[:upto]) in a thread-local accumulator (the experts' tile counts are few: each
    thread sums them itself rather than a scan writing shared memory in a loop)."""
    T.buffer_store(acc, tirx.const(0, "int32"), [0])
    with T.serial(0, upto) as i:
        T.buffer_store(acc, acc[0] + values[i], [0])
    return T.bind(acc[0])


def _scan(spec, bufs, chunks, tiles) -> None:
    experts, tile = spec.experts, spec.tile
    counts = bufs["counts"]
    with ExitStack() as stack:
        _, tx = launch(stack, blockIdx_x=1, threadIdx_x=THREADS)
        tiles_of = T.alloc_buffer((experts,), "int32", scope="shared")
        used = T.alloc_buffer((experts,), "int32", scope="shared")
        run = T.alloc_buffer((1,), "int32", scope="local")

        def per_expert(e):  # counts become each chunk's offset within the expert's rows
            T.buffer_store(run, tirx.const(0, "int32"), [0])
            with T.serial(0, chunks) as c:
                at = c * experts + e
                seen = T.bind(counts[at])
                T.buffer_store(counts, run[0], [at])
                T.buffer_store(run, run[0] + seen, [0])
            T.buffer_store(used, run[0], [e])
            T.buffer_store(tiles_of, (run[0] + tile - 1) // tile, [e])

        _experts(THREADS, experts, tx, per_expert)
        T.evaluate(T.tvm_storage_sync("shared"))

        def place(e):  # the expert's base, its tiles, and the padding of its last tile
            first = _prefix(tiles_of, e, run)
            base, mine, rows = T.bind(first * tile), T.bind(tiles_of[e]), T.bind(used[e])
            with T.serial(0, chunks) as c:
                T.buffer_store(counts, counts[c * experts + e] + base, [c * experts + e])
            with T.serial(first, first + mine) as t:
                T.buffer_store(bufs["tile_expert"], T.Cast("int32", e), [t])
            with T.serial(base + rows, (first + mine) * tile) as s:
                T.buffer_store(bufs["order"], tirx.const(-1, "int32"), [s])

        _experts(THREADS, experts, tx, place)
        total = _prefix(tiles_of, experts, run)
        with T.serial(0, ceildiv(tiles, THREADS)) as i:
            t = T.bind(i * THREADS + tx)
            with T.If(tirx.all(t >= total, t < tiles)), T.Then():
                T.buffer_store(bufs["tile_expert"], tirx.const(-1, "int32"), [t])


def _scatter(spec, bufs, pairs, chunks) -> None:
    with ExitStack() as stack:
        c, tx = launch(stack, blockIdx_x=chunks, threadIdx_x=THREADS)
        chunk_ids = T.alloc_buffer((CHUNK,), "int32", scope="shared")
        at = T.alloc_buffer((1,), "int32", scope="local")
        _load_chunk(bufs["ids_scatter"], pairs, c, tx, chunk_ids)

        def write(e):
            T.buffer_store(at, bufs["counts"][c * spec.experts + e], [0])
            with T.serial(0, CHUNK) as i:
                routed = T.bind(chunk_ids[i])
                with T.If(routed == e), T.Then():
                    T.buffer_store(bufs["order"], T.Cast("int32", c * CHUNK + i), [at[0]])
                    T.buffer_store(at, at[0] + 1, [0])

        _experts(THREADS, spec.experts, tx, write)


def build_expert_sort(spec: ExpertSortSpec) -> tirx.PrimFunc:
    """(ids, ids) [tokens, slots] -> (order, tile_expert, counts); nothing runs for a step of up to
    `gemv_max_pairs` routed rows (the outputs are then left as they were)."""
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr(KERNEL_ATTRS)
        tokens = tirx.Var("tokens", "int64")
        sizes = [tirx.Var(n, "int64") for n in ("n_order", "n_tiles", "n_counts")]
        # ids twice, the histogram's and the scatter's: Relax's RewriteDataflowReshape takes a
        # call_tir that reads exactly one tensor for a possible reshape and then requires a
        # block-structured PrimFunc, which a multi-kernel function is not
        ids = T.match_buffer(T.arg("ids", T.handle()), (tokens, spec.slots), "int32")
        again = T.match_buffer(T.arg("ids_scatter", T.handle()), (tokens, spec.slots), "int32")
        bufs = {}
        for name, size in zip(("order", "tile_expert", "counts"), sizes, strict=True):
            bufs[name] = T.match_buffer(T.arg(name, T.handle()), (size,), "int32")
        bufs["ids"], bufs["ids_scatter"] = (
            RoutedRows(ids, spec.slots),
            RoutedRows(again, spec.slots),
        )
        pairs = tokens * spec.slots
        chunks = ceildiv(pairs, CHUNK)
        with T.If(pairs > spec.gemv_max_pairs), T.Then():
            _histogram(spec, bufs, pairs, chunks)
            _scan(spec, bufs, chunks, tile_count(pairs, spec))
            _scatter(spec, bufs, pairs, chunks)
    return ib.get()
