"""Which kernels `mlcx tune` tunes, and the static form each is measured in."""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm.s_tir.meta_schedule as ms
import tvm_ffi

SCHEDULED = "tirx.is_scheduled"
TUNED_TOKENS = 1  # a task is its kernel at one token: the decode step
INDEX_DTYPES = ("int32", "int64")


@dataclass(frozen=True)
class Task:
    name: str
    workload: tvm.IRModule  # the kernel with every dynamic dimension set to TUNED_TOKENS
    key: str
    weight: int  # calls per model step, summed over the exported functions


def is_scheduled(func: tvm.tirx.PrimFunc) -> bool:
    return bool(func.attrs) and SCHEDULED in func.attrs


def specialize(func: tvm.tirx.PrimFunc) -> tvm.IRModule | None:
    """The kernel with each dynamic buffer dimension set to TUNED_TOKENS; None when a shape
    stays symbolic (an expression of several variables), which MetaSchedule cannot measure."""
    binds = {}
    for param in func.params:
        ty = param.ty
        if not isinstance(ty, tvm.tirx.BufferType) or _static(ty.shape):
            continue
        shape = [tvm.tirx.IntImm(_dtype(d), TUNED_TOKENS) if _is_var(d) else d for d in ty.shape]
        binds[param] = tvm.tirx.decl_buffer(shape, ty.dtype, name=param.name)
    workload = tvm.IRModule({"main": func.specialize(binds) if binds else func})
    try:
        ms.arg_info.ArgInfo.from_prim_func(workload["main"])
    except (TypeError, RuntimeError):  # TVM 0.27 raises its errors as RuntimeError
        return None
    return workload


def workload_key(workload: tvm.IRModule) -> str:
    return f"{tvm_ffi.structural_hash(workload) & (2**64 - 1):016x}"


def extract_tasks(fused: tvm.IRModule, target) -> tuple[list[Task], list[str]]:
    """(tasks, names of unscheduled kernels that cannot be tuned)."""
    tasks, skipped = [], []
    for found in ms.relax_integration.extract_tasks(fused, target):
        # the module's own function, as the compile will see it (the extracted copy has
        # different attributes, hence a different key)
        func = fused[found.task_name]
        if is_scheduled(func):
            continue
        workload = specialize(func)
        if workload is None or _indexes_by_tensor(func):
            skipped.append(found.task_name)
            continue
        tasks.append(Task(found.task_name, workload, workload_key(workload), int(found.weight)))
    return tasks, skipped


def _indexes_by_tensor(func: tvm.tirx.PrimFunc) -> bool:
    """Whether an int32/int64 input (token ids, row positions) may index other buffers:
    measured with random inputs, such a kernel reads out of bounds and kills the process.
    (Quantized weight codes are int8/uint8/uint32 and do not count.)"""
    return any(
        isinstance(p.ty, tvm.tirx.BufferType) and str(p.ty.dtype) in INDEX_DTYPES
        for p in func.params
    )


def _static(shape) -> bool:
    return all(isinstance(d, tvm.tirx.IntImm) for d in shape)


def _is_var(dim) -> bool:
    return isinstance(dim, tvm.tirx.Var)


def _dtype(dim) -> str:
    return "int64" if dim.ty is None else str(dim.ty)
