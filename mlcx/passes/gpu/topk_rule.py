"""The schedule rule of the router's top-k kernels (mlcx.kernels.moe): a chain of small
reductions per token (each expert's rank among the others, then each slot's expert or weight,
then their sum), which dlight's reduction rules take one block at a time.

One thread per token computes the whole chain for it, its intermediates (a rank per expert) in
thread-local memory: a few hundred operations per token at real expert counts (128 experts:
16k compares), far below the expert GEMVs that follow.
"""

from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

from mlcx.kernels.moe import TOPK_ATTR

THREADS = 64


class RouterTopK(GPUScheduleRule):
    def apply(self, func: tirx.PrimFunc, target: Target, _tunable: bool):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:
            blocks = list(sch.get_child_blocks(sch.get_sblock("root")))
        except Exception:  # not block-structured (hand-written TIR)
            return None
        if not blocks or any(TOPK_ATTR not in sch.get(b).annotations for b in blocks):
            return None
        *inner, last = blocks
        token = sch.get_loops(last)[0]
        bx, tx = sch.split(token, [None, THREADS])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        for block in reversed(inner):
            sch.set_scope(block, 0, "local")
            sch.compute_at(block, tx, preserve_unit_loops=True)
        return sch
