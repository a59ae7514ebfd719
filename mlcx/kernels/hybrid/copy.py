"""copy_states: state[pairs[i, 1]] <- state[pairs[i, 0]] for every pair, in place, for one state
tensor [slots, *row] (the state-cache contract, item 5: prefix checkpoints and forks).

Pairs are applied in order; a slot is written at most once per call by the runtime's use
(save: live -> checkpoint; resume or fork: checkpoint or parent -> fresh slots). CPU: the
pairs in order, each row's elements split over the cores. GPU: a workgroup per pair,
consecutive threads on consecutive elements (coalesced).
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.hybrid.params import SLOTS, param

THREADS = 256
PARTS = 16  # parallel pieces of a CPU row


def copy_states(row: tuple[int, ...], dtype: str, gpu: bool) -> tirx.PrimFunc:
    """(state [slots, *row] in place, pairs [n, 2] int32)."""
    size = math.prod(row)
    with IRBuilder() as ib, T.prim_func():
        T.func_name("copy_states_gpu" if gpu else "copy_states_cpu")
        # opaque to operator fusion (op_pattern 8) on every target: on CPU a lone
        # injective-looking call became a fused group, which FuseTIR refuses without a root block
        T.func_attr(KERNEL_ATTRS)
        slots, n = tirx.Var(SLOTS, "int64"), tirx.Var("num_copies", "int64")
        state = param("state", (slots, *row), dtype)
        pairs = param("pairs", (n, 2), "int32")
        flat = T.decl_buffer((slots * size,), dtype, data=state.data)

        def move(i, e) -> None:
            src = T.Cast("int64", pairs[i, 0]) * size + e
            dst = T.Cast("int64", pairs[i, 1]) * size + e
            T.buffer_store(flat, flat[src], [dst])

        if gpu:
            _gpu_loops(n, size, move)
        else:
            per = (size + PARTS - 1) // PARTS
            with (
                T.serial(0, n) as i,
                T.parallel(0, PARTS) as part,
                T.serial(part * per, T.min(part * per + per, size)) as e,
            ):
                move(i, e)
    return ib.get()


def _gpu_loops(n, size: int, move) -> None:
    threads = min(THREADS, size)
    bx, tx = T.env_thread("blockIdx.x"), T.env_thread("threadIdx.x")
    with (
        T.launch_thread(bx, n),
        T.launch_thread(tx, threads),
        T.serial(0, (size + threads - 1) // threads) as r,
    ):
        e = r * threads + tx
        if size % threads:
            with T.If(e < size), T.Then():
                move(bx, e)
        else:
            move(bx, e)
