"""The schedule rule of decode's GEMVs (mlcx.passes.gpu.tensor_core_prefill.decode_gemv):
dlight's LowBatchGEMV, for the functions whose matmul block carries `DECODE_GEMV_ATTR` alone,
so that it never takes a kernel another rule should (prefill's tensor-core GEMMs)."""

from __future__ import annotations

from tvm import s_tir, tirx
from tvm.s_tir import dlight as dl
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

from mlcx.kernels.gpu.tensor_core import DECODE_GEMV_ATTR

ROWS_PER_CHUNK = 4  # tokens a workgroup row covers (LowBatchGEMV's bucket)


def _is_decode_gemv(func: tirx.PrimFunc) -> bool:
    try:
        sch = s_tir.Schedule(func)
        blocks = [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # not block-structured (hand-written TIR)
        return False
    return any(DECODE_GEMV_ATTR in b.annotations for b in blocks)


class DecodeGEMV(GPUScheduleRule):
    def __init__(self):
        self.inner = dl.gpu.LowBatchGEMV(ROWS_PER_CHUNK)

    def apply(self, func: tirx.PrimFunc, target: Target, tunable: bool):
        if not isinstance(func, tirx.PrimFunc) or not _is_decode_gemv(func):
            return None
        return self.inner.apply(func, target, tunable)
