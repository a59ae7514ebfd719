"""A dlight rule for matmuls that dequantize their weight inside the reduction.

mlcx's linear layers read a quantized weight through an expression (`fmt.element`), so the
block is `C[t, n] += A[t, k] * f(W, n, k)` with non-affine weight indices; none of dlight's
GPU rules accepts it and Fallback gives one thread per output walking all of K, which is
about 10x slower on lavapipe. This rule splits K across a workgroup's x threads (partial sums in
registers, then one cross-thread sum), gives each workgroup TILE_N output rows along y and
one token per grid row; elementwise epilogues (residual add, cast) run on the reduced value.
"""

from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import normalize_prim_func
from tvm.s_tir.dlight.base import try_inline_contiguous_spatial
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

THREADS_K = 64
TILE_N = 4


def _static(loop_extent) -> bool:
    return isinstance(loop_extent, tirx.IntImm)


class DequantGEMV(GPUScheduleRule):
    def apply(self, func: tirx.PrimFunc, target: Target, _tunable: bool):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        infos = normalize_prim_func(sch)
        if infos is None:
            return None
        infos = try_inline_contiguous_spatial(sch, infos)
        if infos is None or not infos or infos[0].dom_kind() != "SSR":
            return None
        if any(i.dom_kind() != "SS" for i in infos[1:]):
            return None
        block, epilogues = infos[0].block_rv, [i.block_rv for i in infos[1:]]
        t, n, k = sch.get_loops(block)
        if not (_static(sch.get(n).extent) and _static(sch.get(k).extent)):
            return None
        _, k_threads = sch.split(k, [None, THREADS_K])
        partial = sch.rfactor(k_threads, 0)
        t, n, k_outer, k_threads = sch.get_loops(partial)
        n_outer, n_inner = sch.split(n, [None, TILE_N])
        sch.reorder(t, n_outer, n_inner, k_threads, k_outer)
        sch.bind(t, "blockIdx.y")
        sch.bind(n_outer, "blockIdx.x")
        sch.bind(n_inner, "threadIdx.y")
        sch.bind(k_threads, "threadIdx.x")
        sch.set_scope(partial, 0, "local")
        sch.decompose_reduction(partial, k_outer)
        sch.reverse_compute_at(block, n_inner, preserve_unit_loops=True)
        k_sum, *units = sch.get_loops(block)[3:]
        sch.reorder(*units, k_sum)  # cross-thread reduction wants its loop innermost
        sch.bind(k_sum, "threadIdx.x")
        if epilogues:
            sch.set_scope(block, 0, "local")
        for epilogue in epilogues:
            sch.reverse_compute_at(epilogue, n_inner, preserve_unit_loops=True)
        return sch
