"""The schedule rule of the mixture-of-experts TE GEMV (mlcx.kernels.moe) where mlcx's GPU expert
kernels do not take it (mlcx.passes.gpu.fuse_experts: a stack of two weight formats): a gathered
GEMV, whose weight rows are chosen by the router at run time, so dlight's GEMV and Reduction
rules (which read the weight's access pattern from its indices) cannot take it.

Each output element (token, slot, row) gets LANES threads that split its dot product (each
accumulates a strided part, then one cross-thread reduction); ROWS elements to a workgroup.
Element-wise producers of the epilogue are inlined and the epilogue runs per element after the
reduction (the cast to the activation dtype, the router weight's multiply).
"""

from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

from mlcx.kernels.moe import EXPERTS_ATTR

LANES = 32
ROWS = 4


def _blocks(sch: s_tir.Schedule) -> list:
    try:
        return list(sch.get_child_blocks(sch.get_sblock("root")))
    except Exception:  # not block-structured (hand-written TIR)
        return []


def _schedule(sch: s_tir.Schedule, blocks: list, main_index: int) -> None:
    main = blocks[main_index]
    for block in reversed(blocks[:main_index]):
        sch.compute_inline(block)
    after = blocks[main_index + 1 :]
    for block in after[:-1]:
        sch.compute_inline(block)
    *spatial, reduce = sch.get_loops(main)
    bx, ty = sch.split(sch.fuse(*spatial), [None, ROWS])
    r, tx = sch.split(reduce, [None, LANES])
    sch.reorder(bx, ty, tx, r)
    sch.bind(bx, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    sch.annotate(r, ann_key="pragma_auto_unroll_max_step", ann_val=64)
    sch.annotate(r, ann_key="pragma_unroll_explicit", ann_val=1)
    if after:
        sch.set_scope(main, 0, "local")
        sch.reverse_compute_at(after[-1], ty, preserve_unit_loops=True)


class ExpertGEMV(GPUScheduleRule):
    def apply(self, func: tirx.PrimFunc, target: Target, _tunable: bool):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        blocks = _blocks(sch)
        marked = [i for i, b in enumerate(blocks) if EXPERTS_ATTR in sch.get(b).annotations]
        if len(marked) != 1:
            return None
        _schedule(sch, blocks, marked[0])
        return sch
