"""The microkernel of the row-tiled linear kernels: one band of 16 weight rows against a few
input rows, accumulators in registers (mlcx.kernels.cpu.qtiled walks it over a linear's bands
and tokens; mlcx.kernels.cpu.qexperts over each expert's bands and the rows routed to it)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.tiled_reader import PAIRS, ROWS
from mlcx.kernels.cpu.weights import CHUNK


@dataclass(frozen=True)
class BandInputs:
    """What a band block multiplies: quantized rows (`q`, the same codes as int32 `words`),
    through a reader and its dots (mlcx.kernels.cpu.tiled_dots), `in_features` wide."""

    reader: object
    dots: object
    views: dict
    q: object
    words: tirx.Buffer
    in_features: int
    ahead: int  # bytes of weights prefetched ahead (0: none)


CHAINS = 8  # independent int32 sums that keep the multiply-add unit busy (latency 5, 1/cycle)


def _ways(sums: int, planes: int) -> int:
    """Partial sums per int32 sum, so that a few tokens still give CHAINS independent chains
    (a divisor of the planes a quarter unpacks)."""
    ways = 1
    while ways < planes and sums * ways < CHAINS:
        ways *= 2
    return ways


def band_block(inp: BandInputs, band, rows: Sequence, store: Callable) -> None:
    """store(i, float32 x 16) for each input row rows[i] (a static count): its dot products
    with weight rows band * 16 .. band * 16 + 15."""
    reader, dots, q, views = inp.reader, inp.dots, inp.q, inp.views
    count, subs = len(rows), reader.subs  # scale groups per chunk (Q6_K: 2)
    ways = _ways(count * subs, dots.words_per_chunk // 4)
    rv = vec.ramp(0, ROWS)
    facc = T.alloc_buffer((count, ROWS), "float32")
    iacc = T.alloc_buffer((count * subs * ways, ROWS), "int32")
    for t in range(count):
        T.buffer_store(facc, vec.splat(vec.f32(0.0), ROWS), [t, rv])
    with T.serial(0, inp.in_features // CHUNK) as g:
        for i in range(count * subs * ways):
            T.buffer_store(iacc, vec.splat(tirx.const(0, "int32"), ROWS), [i, rv])
        # A loop over quarters, not unrolled: unrolled, LLVM hoists every plane and spills.
        # One loop per scale group, so that each accumulator's index is static (a register).
        per = PAIRS // 4 // subs
        for sub in range(subs):
            with T.serial(0, per) as qq:
                quarter = sub * per + qq
                if inp.ahead:
                    reader.prefetch_quarter(views, band, g, quarter, inp.ahead)
                planes = dots.planes(reader, views, band, g, quarter)
                first = g * dots.words_per_chunk + quarter * len(planes)
                for m, plane in enumerate(planes):
                    w = T.bind(plane)
                    for t, row in enumerate(rows):
                        i = (t * subs + sub) * ways + m % ways
                        acc = dots.accumulate(iacc[i, rv], w, inp.words[row, first + m])
                        T.buffer_store(iacc, acc, [i, rv])
        wsc = [T.bind(reader.scales(views, band, g, s)) for s in range(subs)]
        offsets = dots.offsets(reader, views, band, g, wsc)
        woff = [T.bind(o) if o is not None else None for o in offsets]
        for t, row in enumerate(rows):
            value = None
            for s in range(subs):
                half = s if len(woff) > 1 else None
                first = (t * subs + s) * ways
                total = functools.reduce(operator.add, [iacc[first + w, rv] for w in range(ways)])
                dot = q.scaled_dots(total, wsc[s], woff[s], row, g, ROWS, half)
                value = dot if value is None else value + dot
            T.buffer_store(facc, facc[t, rv] + value, [t, rv])
    for t in range(count):
        store(t, facc[t, rv])
