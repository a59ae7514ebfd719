"""CPU schedule of the mixture-of-experts GEMVs (mlcx.kernels.moe): the output rows (token,
slot, row) split across the cores, each row's dot product serial (LLVM vectorizes it), the
epilogue (cast, router weight) per row right after it. Unscheduled, TVM runs the kernel on one
core. A pass over the fused PrimFuncs, after legalization."""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx

from mlcx.kernels.moe import EXPERTS_ATTR
from mlcx.passes.prim_funcs import map_prim_funcs


def _schedule(func: tirx.PrimFunc) -> tirx.PrimFunc | None:
    if func.attrs and func.attrs.get("tirx.is_scheduled", False):
        return None  # mlcx's hand-written kernels
    try:
        sch = s_tir.Schedule(func)
        blocks = list(sch.get_child_blocks(sch.get_sblock("root")))
    except Exception:  # not block-structured (hand-written TIR)
        return None
    marked = [i for i, b in enumerate(blocks) if EXPERTS_ATTR in sch.get(b).annotations]
    if len(marked) != 1:
        return None
    index = marked[0]
    for block in reversed(blocks[:index]):
        sch.compute_inline(block)
    after = blocks[index + 1 :]
    for block in after[:-1]:
        sch.compute_inline(block)
    *spatial, _ = sch.get_loops(blocks[index])
    rows = sch.fuse(*spatial)
    sch.parallel(rows)
    if after:
        sch.reverse_compute_at(after[-1], rows)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)  # tuning leaves it alone


def schedule_experts_cpu() -> tvm.transform.Pass:
    return map_prim_funcs("mlcx.ScheduleExpertsCPU", _schedule)
