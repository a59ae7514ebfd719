"""Dense attention without a mask for CPU targets: an image encoder's patches all see each
other (SigLIP), no pages, no cache.

Work items are (head, slice of row blocks) over all cores. A block of `rows` query rows meets
the keys `lanes` at a time, the keys given transposed (kt [heads, d, n], as the model's
`permute_dims` already makes them), so its scores are lane-wide FMAs, one per feature; each row
then takes an exact softmax (vectorized exp) and the block sums the values together, each
value row loaded once per block. The same plan as the paged kernel
(mlcx.kernels.cpu.paged_attention), whose keys live in pages instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import dense_scores, dense_values, vec

SLICES = 4  # row-block slices per head
ROWS = 8  # query rows sharing each key and value load from registers
GROUPS = 4  # row groups of a block sharing each key tile from L1 and value tile from L2
VALUE_TILE = 64  # keys whose value rows a block's row groups read in turn (18 KB at d = 72: L1)
# vector registers of running sums (of 32 with AVX-512; on AVX2 a few spill, cheaper than reloads)
ACCUMULATORS = 24
NEG_INF = -3.0e38


@dataclass(frozen=True)
class DenseShape:
    heads: int
    tokens: int
    head_dim: int
    scale: float
    int16_scores: bool = False  # dense_scores: q k^T from int16 codes (13+ bits a value)

    def __post_init__(self) -> None:
        if min(self.heads, self.tokens, self.head_dim) < 1:
            raise ValueError(f"attention shape must be positive: {self}")

    @property
    def lanes(self) -> int:
        """Keys per score vector: the widest that divides the token count."""
        return next(w for w in (16, 8, 4, 2, 1) if self.tokens % w == 0)

    @property
    def key_vectors(self) -> int:
        """Score vectors per row in flight: two share each query load where the keys allow."""
        return 2 if self.tokens % (2 * self.lanes) == 0 else 1

    @property
    def value_parts(self) -> list[tuple[int, int]]:
        """(first feature, lanes) of the vectors that cover a value row (d = 72: four of 16
        lanes and one of 8), so only the last few features are summed narrower."""
        return dense_scores.cover(self.head_dim)

    @property
    def packs_int16(self) -> bool:
        """Whether the scores come from int16 codes (int16_scores and at least 2 keys a
        vector: the pairwise int16 dot needs 4 lanes)."""
        return self.int16_scores and self.lanes >= 2

    @property
    def value_chunks(self) -> list[list[tuple[int, int]]]:
        """value_parts in runs of at most ACCUMULATORS, each run summed in registers."""
        parts = self.value_parts
        return [parts[i : i + ACCUMULATORS] for i in range(0, len(parts), ACCUMULATORS)]

    def value_rows(self, chunk: list[tuple[int, int]]) -> int:
        """Rows of a block summed together over a chunk: their running sums fill at most
        ACCUMULATORS registers."""
        block = ROWS * GROUPS
        return next(
            r for r in range(block, 0, -1) if block % r == 0 and r * len(chunk) <= ACCUMULATORS
        )

    @property
    def value_tile(self) -> int:
        return next(t for t in range(min(VALUE_TILE, self.tokens), 0, -1) if self.tokens % t == 0)

    @property
    def name(self) -> str:
        suffix = "_i16" if self.packs_int16 else ""
        return f"dense_attention_cpu_{self.heads}x{self.tokens}x{self.head_dim}{suffix}"


def _scores(sh: DenseShape, bufs, head, row0, scores) -> None:
    """scores[g * ROWS + r, key] for the block's rows, each tile of keys read by its groups."""
    n, lanes, kv = sh.tokens, sh.lanes, sh.key_vectors
    acc = T.alloc_buffer((ROWS * kv, lanes), "float32")
    scale = vec.splat(vec.f32(sh.scale), lanes)
    with T.serial(0, n // (lanes * kv)) as j, T.serial(0, GROUPS) as group:
        for a in range(ROWS * kv):
            T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [a, vec.ramp(0, lanes)])
        with T.serial(0, sh.head_dim) as c:
            keys = [
                T.bind(bufs["kt"][head, c, vec.ramp((j * kv + v) * lanes, lanes)])
                for v in range(kv)
            ]
            for r in range(ROWS):
                row = T.min(row0 + group * ROWS + r, n - 1)
                query = T.bind(vec.splat(bufs["q"][head, row, c], lanes))
                for v in range(kv):
                    update = acc[r * kv + v, vec.ramp(0, lanes)] + query * keys[v]
                    T.buffer_store(acc, update, [r * kv + v, vec.ramp(0, lanes)])
        for r in range(ROWS):
            for v in range(kv):
                score = acc[r * kv + v, vec.ramp(0, lanes)] * scale
                index = [group * ROWS + r, vec.ramp((j * kv + v) * lanes, lanes)]
                T.buffer_store(scores, score, index)


def _row_max(sh: DenseShape, scores, r):
    n, lanes = sh.tokens, sh.lanes
    best = T.alloc_buffer((lanes,), "float32")
    T.buffer_store(best, vec.splat(vec.f32(NEG_INF), lanes), [vec.ramp(0, lanes)])
    with T.serial(0, n // lanes) as j:
        row = scores[r, vec.ramp(j * lanes, lanes)]
        T.buffer_store(best, T.max(best[vec.ramp(0, lanes)], row), [vec.ramp(0, lanes)])
    return T.bind(vec.hmax(best[vec.ramp(0, lanes)], lanes))


def _softmax(sh: DenseShape, scores, r):
    """Row r's scores exponentiated in place; their sum."""
    n, lanes = sh.tokens, sh.lanes
    total = T.alloc_buffer((lanes,), "float32")
    T.buffer_store(total, vec.splat(vec.f32(0.0), lanes), [vec.ramp(0, lanes)])
    top = _row_max(sh, scores, r)
    with T.serial(0, n // lanes) as j:
        shifted = scores[r, vec.ramp(j * lanes, lanes)] - vec.splat(top, lanes)
        weight = T.bind(vec.exp(shifted, lanes))
        T.buffer_store(scores, weight, [r, vec.ramp(j * lanes, lanes)])
        T.buffer_store(total, total[vec.ramp(0, lanes)] + weight, [vec.ramp(0, lanes)])
    return T.bind(vec.hsum(total[vec.ramp(0, lanes)], lanes))


def _value_sums(sh: DenseShape, bufs, head, tile, sums, scores) -> None:
    """sums[row, :] += weights of the keys of `tile` times their value rows, for every row of
    the block: a few rows and a chunk of feature vectors at a time in registers."""
    for chunk in sh.value_chunks:
        _value_chunk(sh, bufs, head, tile, sums, scores, chunk)


def _value_chunk(sh: DenseShape, bufs, head, tile, sums, scores, chunk) -> None:
    keys, rows, width = sh.value_tile, sh.value_rows(chunk), len(chunk)
    acc = T.alloc_buffer((rows * width, 16), "float32")

    def slot(r: int, i: int):
        return [r * width + i, vec.ramp(0, chunk[i][1])]

    def feature(r, i: int):
        return [r, vec.ramp(*chunk[i])]

    with T.serial(0, ROWS * GROUPS // rows) as group:
        for r in range(rows):
            for i in range(width):
                T.buffer_store(acc, sums[feature(group * rows + r, i)], slot(r, i))
        with T.serial(tile * keys, (tile + 1) * keys) as s:
            values = [T.bind(bufs["v"][head, s, vec.ramp(*part)]) for part in chunk]
            for r in range(rows):
                weight = T.bind(scores[group * rows + r, s])
                for i, (_, lanes) in enumerate(chunk):
                    update = acc[slot(r, i)] + vec.splat(weight, lanes) * values[i]
                    T.buffer_store(acc, update, slot(r, i))
        for r in range(rows):
            for i in range(width):
                T.buffer_store(sums, acc[slot(r, i)], feature(group * rows + r, i))


def _float_values(sh: DenseShape, bufs, head, block, scores, sums, totals) -> None:
    with T.serial(0, ROWS * GROUPS) as r:
        T.buffer_store(totals, _softmax(sh, scores, r), [r])
    with T.serial(0, sh.tokens // sh.value_tile) as tile:
        _value_sums(sh, bufs, head, tile, sums, scores)


def _int16_values(sh: DenseShape, packed, head, scores, best, words, sums, totals) -> None:
    with T.serial(0, ROWS * GROUPS) as r:
        T.buffer_store(totals, dense_values.weight_codes(sh, scores, words, r, best), [r])
    with T.serial(0, sh.tokens // dense_values.value_tile(sh.tokens)) as tile:
        for chunk in sh.value_chunks:
            dense_values.value_sums(sh, packed, head, tile, sums, words, chunk, ROWS * GROUPS)


def _block(sh: DenseShape, bufs, head, block, scores, packed, words) -> None:
    rows = ROWS * GROUPS
    row0 = block * rows
    totals = T.alloc_buffer((rows,), "float32")
    sums = T.alloc_buffer((rows, sh.head_dim), "float32")
    with T.serial(0, rows) as r:
        for start, lanes in sh.value_parts:
            T.buffer_store(sums, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(start, lanes)])
    if packed:
        best = T.alloc_buffer((rows, sh.lanes), "float32")
        dense_scores.int16_scores(sh, packed, head, row0, scores, best, ROWS, GROUPS)
        _int16_values(sh, packed, head, scores, best, words, sums, totals)
    else:
        _scores(sh, bufs, head, row0, scores)
        _float_values(sh, bufs, head, block, scores, sums, totals)
    with T.serial(0, rows) as r, T.If(row0 + r < sh.tokens), T.Then():
        inv = T.bind(vec.f32(1.0) / totals[r])
        for start, lanes in sh.value_parts:
            out = sums[r, vec.ramp(start, lanes)] * vec.splat(inv, lanes)
            if packed:
                out = out * packed["value_scales"][head, vec.ramp(start, lanes)]
            T.buffer_store(bufs["out"], out, [head, row0 + r, vec.ramp(start, lanes)])


def dense_attention_cpu(sh: DenseShape) -> tirx.PrimFunc:
    """out [h, n, d] = softmax(q kt * scale) v for q, v [h, n, d] and kt [h, d, n], float32;
    the int16 path (packs_int16) takes the keys untransposed, k [h, n, d], as it codes them by
    rows (the graph's transpose then goes away)."""
    h, n, d = sh.heads, sh.tokens, sh.head_dim
    blocks = (n + ROWS * GROUPS - 1) // (ROWS * GROUPS)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(sh.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        keys = ("k", (h, n, d)) if sh.packs_int16 else ("kt", (h, d, n))
        shapes = {"q": (h, n, d), keys[0]: keys[1], "v": (h, n, d), "out": (h, n, d)}
        bufs = {k: T.match_buffer(T.arg(k, T.handle()), s, "float32") for k, s in shapes.items()}
        workspace = T.alloc_buffer((h * SLICES * ROWS * GROUPS * n,), "float32")
        packed = {}
        if sh.packs_int16:
            packed = {
                **dense_scores.packed_buffers(sh),
                **dense_values.value_buffers(sh),
            }
        pairs = (
            T.alloc_buffer((h * SLICES * ROWS * GROUPS * (n // 2),), "int32") if packed else None
        )
        if packed:
            with T.parallel(0, h) as head:
                dense_scores.pack(sh, bufs, head, packed)
                dense_values.pack(sh, bufs, head, packed)
        with T.parallel(0, h * SLICES) as item:
            head, part = item // SLICES, item % SLICES
            rows = ROWS * GROUPS
            scores = T.decl_buffer(
                (rows, n), "float32", data=workspace.data, elem_offset=item * rows * n
            )
            words = None
            if packed:
                words = T.decl_buffer(
                    (rows, n // 2),
                    "int32",
                    data=pairs.data,
                    elem_offset=item * rows * (n // 2),
                )
            with T.serial(0, (blocks - part + SLICES - 1) // SLICES) as i:
                _block(sh, bufs, head, part + i * SLICES, scores, packed, words)
    return ib.get()
