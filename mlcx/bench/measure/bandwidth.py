"""Memory read bandwidth as the compiled kernels see it: a parallel streaming sum in TIR."""

from __future__ import annotations

import functools
import time

import numpy as np
import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T
from tvm.target import codegen

from mlcx.kernels.cpu import vec

LANES = 16
UNROLL = 4  # independent accumulators per thread
BUFFER_BYTES = 256 << 20  # well past any last-level cache


def _read_kernel(elements: int, threads: int):
    step = LANES * UNROLL
    per = elements // threads // step * step
    with IRBuilder() as ib, T.prim_func():
        T.func_name("read_bandwidth")
        T.func_attr({"tirx.noalias": True})
        data = T.match_buffer(T.arg("data", T.handle()), (elements,), "float32")
        out = T.match_buffer(T.arg("out", T.handle()), (threads, LANES), "float32")
        with T.parallel(0, threads) as c:
            acc = T.alloc_buffer((UNROLL, LANES), "float32")
            for u in range(UNROLL):
                T.buffer_store(acc, vec.splat(vec.f32(0.0), LANES), [u, vec.ramp(0, LANES)])
            with T.serial(0, per // step) as i:
                for u in range(UNROLL):
                    index = c * per + i * step + u * LANES
                    value = acc[u, vec.ramp(0, LANES)] + data[vec.ramp(index, LANES)]
                    T.buffer_store(acc, value, [u, vec.ramp(0, LANES)])
            total = acc[0, vec.ramp(0, LANES)]
            for u in range(1, UNROLL):
                total = total + acc[u, vec.ramp(0, LANES)]
            T.buffer_store(out, total, [c, vec.ramp(0, LANES)])
    return ib.get(), per * threads * 4


@functools.cache
def _compiled(elements: int, threads: int):
    func, nbytes = _read_kernel(elements, threads)
    target = tvm.target.Target(
        {"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": threads}
    )
    return tvm.compile(tvm.IRModule({"read_bandwidth": func}), target=target), nbytes


def measure_read_bandwidth(threads: int, reps: int = 5) -> float:
    """Median bytes per second that `threads` threads read from a 256 MiB buffer."""
    elements = BUFFER_BYTES // 4
    executable, nbytes = _compiled(elements, threads)
    kernel = executable["read_bandwidth"]
    dev = tvm.cpu()
    data = tvm.runtime.tensor(np.ones(elements, np.float32), dev)
    out = tvm.runtime.empty((threads, LANES), "float32", dev)
    kernel(data, out)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        kernel(data, out)
        times.append(time.perf_counter() - start)
    return nbytes / float(np.median(times))
