"""A schedule rule for injective kernels (every block spatial: splits, casts, gathers, the
embedding lookup): producers are inlined into the blocks that remain, and each remaining block
runs one output element per thread, consecutive threads on consecutive elements (coalesced),
THREADS to a workgroup. Kernels with a reduction are left to the reduction rules."""

from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import normalize_prim_func
from tvm.s_tir.dlight.base import try_inline
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

THREADS = 256


class Elementwise(GPUScheduleRule):
    def apply(self, func: tirx.PrimFunc, target: Target, _tunable: bool):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        infos = normalize_prim_func(sch)
        if not infos or any(set(i.dom_kind()) - {"S"} for i in infos):
            return None
        for info in try_inline(sch, infos):
            block = info.block_rv
            if any(sch.get(loop).thread_binding is not None for loop in sch.get_loops(block)):
                continue  # shares its loops with a block bound already
            loops = sch.get_loops(block) or [sch.add_unit_loop(block)]
            bx, tx = sch.split(sch.fuse(*loops), factors=[None, THREADS])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
        return sch
