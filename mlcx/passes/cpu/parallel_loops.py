"""CPU schedule of the kernels TVM legalizes without one (an image encoder's LayerNorms,
GELUs, bias adds, transposes): elementwise steps inlined into their consumers, then each root
block's outer spatial loop split across the cores, its innermost loop left to LLVM's
vectorizer. Unscheduled, each runs on one core. A pass over the fused PrimFuncs after
legalization; hand-written kernels (tirx.is_scheduled) are left alone.
"""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx

from mlcx.passes.prim_funcs import map_prim_funcs

MIN_ITERATIONS = 16  # an outer loop shorter than this stays serial: too little to share


def _schedule(func: tirx.PrimFunc) -> tirx.PrimFunc | None:
    if func.attrs and func.attrs.get("tirx.is_scheduled", False):
        return None
    try:
        sch = s_tir.Schedule(func)
        blocks = list(sch.get_child_blocks(sch.get_sblock("root")))
    except Exception:  # not block-structured (hand-written TIR)
        return None
    changed = False
    # elementwise steps into their consumers: a GELU is one loop, not ten buffers of its size
    for block in blocks[:-1]:
        try:
            sch.compute_inline(block)
            changed = True
        except Exception:  # a reduction, or read by more than its consumer: kept
            continue
    for block in sch.get_child_blocks(sch.get_sblock("root")):
        loops = sch.get_loops(block)
        if not loops:
            continue
        extent = sch.get(loops[0]).extent
        if not isinstance(extent, tirx.IntImm) or int(extent) < MIN_ITERATIONS:
            continue
        try:
            sch.parallel(loops[0])  # refused for a reduction loop: that block stays serial
        except Exception:
            continue
        changed = True
    return sch.mod["main"] if changed else None


def parallel_loops_cpu() -> tvm.transform.Pass:
    return map_prim_funcs("mlcx.ParallelLoopsCPU", _schedule)
