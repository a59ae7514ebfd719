"""Int16 GEMM for float-weight linears of image encoders on CPUs with int16 pair dot products
(KernelConfig.int16_pairs): twice the multiplies an instruction of a float32 FMA (`vpdpwssd`
on AVX512-VNNI).

Each input row and each weight row is scaled by its largest magnitude onto codes of at most
INPUT_LIMIT and WEIGHT_LIMIT (12 bits and a sign: on unit-normal data the outputs' error is
about float16's, 3-4e-4 of the largest), so TILE_FEATURES products sum in int32 without
overflow; each tile's sums are added to float32 ones and the two scales
applied once per output. The weights are coded as the float kernel packs them (a tile of
ROWS output rows per block, per call), so artifacts keep float weights. Pairs of adjacent
features share an int32 word (low half the even one): a token's pair is one broadcast, a
tile's pair one load per 16 rows.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import LinearSpec, declare_params, split_range, store_out
from mlcx.kernels.lowering_marks import EXACT_BUFFERS

INPUT_LIMIT = 4095
WEIGHT_LIMIT = 4095
TILE_FEATURES = 128
assert TILE_FEATURES * INPUT_LIMIT * WEIGHT_LIMIT < 2**31  # one tile's int32 sums
ROWS = 32  # output rows of a packed tile: two 16-lane registers
TOKENS = 8  # tokens of one microkernel step: 16 int32 sums in registers
WIDE = 32  # input features coded per vector step
CHUNK_BYTES = 512 * 1024  # input codes of a token chunk (L2 holds them and a weight tile)


def _codes(x, lanes: int):
    return T.Cast(vec.vtype("int32", lanes), T.round(x))


def _word(even, odd, lanes: int):
    mask = vec.splat(tirx.const(0xFFFF, "int32"), lanes)
    return (even & mask) | (odd << vec.splat(tirx.const(16, "int32"), lanes))


def _abs_max(load, count: int):
    """max |load(i, lanes)| over features 0..count, WIDE at a time, then the rest one by one."""
    best = T.alloc_buffer((WIDE,), "float32")
    every = vec.ramp(0, WIDE)
    T.buffer_store(best, vec.splat(vec.f32(1e-30), WIDE), [every])
    with T.serial(0, count // WIDE) as j:
        value = T.bind(load(j * WIDE, WIDE))
        T.buffer_store(best, T.max(best[every], T.max(value, -value)), [every])
    top = T.bind(vec.hmax(best[every], WIDE))
    for i in range(count - count % WIDE, count):
        value = T.bind(load(i, 1))
        top = T.bind(T.max(top, T.max(value, -value)))
    return top


def _code_input(spec: LinearSpec, bufs, t, words, scales) -> None:
    """words[t, :] = input row t's code pairs; scales[t] = its step."""
    k, half = spec.in_features, WIDE // 2

    def load(i, lanes):
        return bufs["x"][t, vec.ramp(i, lanes)]

    top = T.bind(_abs_max(load, k))
    inv = T.bind(vec.f32(INPUT_LIMIT) / top)
    with T.serial(0, k // WIDE) as j:
        codes = T.bind(_codes(load(j * WIDE, WIDE) * vec.splat(inv, WIDE), WIDE))
        even = T.Shuffle([codes], list(range(0, WIDE, 2)))
        odd = T.Shuffle([codes], list(range(1, WIDE, 2)))
        T.buffer_store(words, _word(even, odd, half), [t, vec.ramp(j * half, half)])
    for i in range(k - k % WIDE, k, 2):
        even = _codes(load(i, 1) * inv, 1)
        odd = _codes(load(i + 1, 1) * inv, 1) if i + 1 < k else tirx.const(0, "int32")
        T.buffer_store(words, _word(even, odd, 1), [t, i // 2])
    T.buffer_store(scales, top * vec.f32(1.0 / INPUT_LIMIT), [t])


def _pack(spec: LinearSpec, bufs, tiles, steps, block) -> None:
    """tiles[block, p, r] = the code pair (2p, 2p + 1) of weight row block * ROWS + r;
    steps[block, r] = its step; rows past the weight's are zeros."""
    k, n = spec.in_features, spec.out_features
    with T.serial(0, ROWS) as r:
        row = T.min(block * ROWS + r, n - 1)
        real = block * ROWS + r < n

        def load(i, lanes):
            return bufs["weight"][row, vec.ramp(i, lanes)]

        top = T.bind(_abs_max(load, k))
        inv = T.bind(T.Select(real, vec.f32(WEIGHT_LIMIT) / top, vec.f32(0.0)))
        with T.serial(0, k // 2) as p:
            even = _codes(load(2 * p, 1) * inv, 1)
            odd = _codes(load(2 * p + 1, 1) * inv, 1)
            T.buffer_store(tiles, _word(even, odd, 1), [block, p, r])
        if k % 2:
            last = _word(_codes(load(k - 1, 1) * inv, 1), 0, 1)
            T.buffer_store(tiles, last, [block, k // 2, r])
        T.buffer_store(steps, top * vec.f32(1.0 / WEIGHT_LIMIT), [block, r])


def _tile_sums(words, tiles, block, iacc, t0, tokens: int, first, count: int) -> None:
    """iacc[t * 2 + v] += the products of pairs first .. first + count."""
    every = vec.ramp(0, 16)
    with T.serial(first, first + count) as p:
        weights = [
            T.bind(T.reinterpret("int16x32", tiles[block, p, vec.ramp(16 * v, 16)])) for v in (0, 1)
        ]
        for t in range(tokens):
            pair = T.bind(T.reinterpret("int16x32", vec.splat(words[t0 + t, p], 16)))
            for v in (0, 1):
                update = iacc[2 * t + v, every] + vec.madd_i16(pair, weights[v], 32)
                T.buffer_store(iacc, update, [2 * t + v, every])


def _micro(spec: LinearSpec, bufs, words, scales, tiles, steps, block, t0, tokens: int) -> None:
    pairs, per = (spec.in_features + 1) // 2, TILE_FEATURES // 2
    every = vec.ramp(0, 16)
    iacc = T.alloc_buffer((2 * tokens, 16), "int32")
    facc = T.alloc_buffer((2 * tokens, 16), "float32")
    for a in range(2 * tokens):
        T.buffer_store(facc, vec.splat(vec.f32(0.0), 16), [a, every])

    def tile_run(first, count: int) -> None:
        for a in range(2 * tokens):
            T.buffer_store(iacc, vec.splat(tirx.const(0, "int32"), 16), [a, every])
        _tile_sums(words, tiles, block, iacc, t0, tokens, first, count)
        for a in range(2 * tokens):
            T.buffer_store(facc, facc[a, every] + vec.to_f32(iacc[a, every]), [a, every])

    with T.serial(0, pairs // per) as kb:
        tile_run(kb * per, per)
    if pairs % per:
        tile_run(pairs - pairs % per, pairs % per)
    _store(spec, bufs, facc, scales, steps, block, t0, tokens)


def _store(spec: LinearSpec, bufs, facc, scales, steps, block, t0, tokens: int) -> None:
    n, tail = spec.out_features, spec.out_features % ROWS
    for t in range(tokens):
        step = vec.splat(scales[t0 + t], ROWS)
        sums = vec.concat(facc[2 * t, vec.ramp(0, 16)], facc[2 * t + 1, vec.ramp(0, 16)], 16)
        value = T.bind(sums * step * steps[block, vec.ramp(0, ROWS)])
        if not tail:
            store_out(spec, bufs, t0 + t, vec.ramp(block * ROWS, ROWS), value)
            continue
        with T.If(block < n // ROWS):
            with T.Then():
                store_out(spec, bufs, t0 + t, vec.ramp(block * ROWS, ROWS), value)
            with T.Else():
                last = T.Shuffle([value], list(range(tail)))
                store_out(spec, bufs, t0 + t, vec.ramp(block * ROWS, tail), last)


def _token_chunk(pairs: int) -> int:
    """Tokens whose code rows every row tile meets in turn: CHUNK_BYTES of them, so they stay
    in L2 beside a tile instead of streaming from memory once per tile."""
    return max(TOKENS, CHUNK_BYTES // (4 * pairs) // TOKENS * TOKENS)


def int16_name(spec: LinearSpec) -> str:
    return spec.name + "_i16"


def build_int16_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    """out [tokens, n] = x [tokens, k] @ weight [n, k]^T, float32 in and out, int16 math."""
    k, n = spec.in_features, spec.out_features
    pairs = (k + 1) // 2
    with IRBuilder() as ib, T.prim_func():
        T.func_name(int16_name(spec))
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        tokens, bufs = declare_params(spec)
        words = T.alloc_buffer((tokens, pairs), "int32")
        scales = T.alloc_buffer((tokens,), "float32")
        with T.parallel(0, cfg.threads) as c:
            begin, end = split_range(tokens, cfg.threads, c)
            with T.serial(begin, end) as t:
                _code_input(spec, bufs, t, words, scales)
        blocks = (n + ROWS - 1) // ROWS
        tiles = T.alloc_buffer((blocks, pairs, ROWS), "int32")
        steps = T.alloc_buffer((blocks, ROWS), "float32")
        with T.parallel(0, cfg.threads) as c:
            begin, end = split_range(blocks, cfg.threads, c)
            with T.serial(begin, end) as block:
                _pack(spec, bufs, tiles, steps, block)
        chunk = _token_chunk(pairs)
        with T.parallel(0, cfg.threads) as c:
            begin, end = split_range(blocks, cfg.threads, c)
            with T.serial(0, (tokens + chunk - 1) // chunk) as part, T.serial(begin, end) as block:
                first = part * chunk
                size = T.min(tokens - first, chunk)
                args = (spec, bufs, words, scales, tiles, steps, block)
                with T.serial(0, size // TOKENS) as tb:
                    _micro(*args, first + tb * TOKENS, TOKENS)
                with T.serial(first + size // TOKENS * TOKENS, first + size) as t:
                    _micro(*args, t, 1)
    return ib.get()
