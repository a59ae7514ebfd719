"""The Relax pipeline for CPU targets.

1. Linear layers become hand-written kernels with their RMSNorm/SwiGLU input and residual add
   fused in (mlcx.passes.cpu.fuse_linear), unless the linear-kernel choice is `tvm`; LoRA
   kernels first leave those inputs and adds to the linears (mlcx.passes.cpu.fuse_lora).
2. TVM's CPU legalization and operator fusion for the rest; the mixture-of-experts GEMVs
   split across the cores (mlcx.passes.cpu.experts_schedule).
3. A tuning database from `mlcx tune`, when given, schedules the kernels it has records for
   (mlcx.passes.tuning). It was measured on the module built with one linear-kernel choice,
   which the compile must use too (the caller resolves that: passes.tuning.records).
"""

from __future__ import annotations

from pathlib import Path

import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.passes.cpu.encoder_kernels import encoder_kernels_cpu
from mlcx.passes.cpu.experts_schedule import schedule_experts_cpu
from mlcx.passes.cpu.fuse_experts import fuse_experts
from mlcx.passes.cpu.fuse_linear import fuse_linear
from mlcx.passes.cpu.fuse_lora import fuse_lora
from mlcx.passes.cpu.parallel_loops import parallel_loops_cpu
from mlcx.passes.fuse_rope_append import fuse_rope_append
from mlcx.passes.tuning.apply import apply_database
from mlcx.passes.tuning.records import open_db


def graph_passes(
    target: tvm.target.Target, linear_kernels: LinearKernels
) -> list[tvm.transform.Pass]:
    """Relax-level rewrites before legalization (also used by `mlcx tune` to find tasks)."""
    config = KernelConfig.for_target(target, linear_kernels)
    # the LoRA kernels first: the norms, SwiGLUs and residual adds are then left to the linears
    linears = [fuse_lora(config), fuse_linear(config)] if linear_kernels.hand_written else []
    experts = [fuse_experts(config)] if linear_kernels.integer else []
    return [*linears, *experts, fuse_rope_append()]


def finalize_passes(target: tvm.target.Target) -> list[tvm.transform.Pass]:
    """TVM's CPU finalization without KillAfterLastUse: storage is statically planned, so
    releasing each tensor early saves no memory, while the releases were about a third of
    the VM instructions of a decode step."""
    return [p for p in cpu_generic.finalize_passes(target) if p.info.name != "KillAfterLastUse"]


def cpu_pipeline(
    target: tvm.target.Target, linear_kernels: LinearKernels, tuning_db: Path | None = None
) -> tvm.transform.Pass:
    tuning = [apply_database(open_db(tuning_db))] if tuning_db is not None else []

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            seq = tvm.transform.Sequential(
                graph_passes(target, linear_kernels)
                + cpu_generic.library_dispatch_passes(target)
                + cpu_generic.legalize_passes(target)
                + [schedule_experts_cpu()]
                + tuning
                + cpu_generic.dataflow_lower_passes(target)
                + finalize_passes(target)
            )
            return seq(mod)

    return _pipeline


def encoder_cpu_pipeline(
    target: tvm.target.Target, int16_linears: bool = False
) -> tvm.transform.Pass:
    """An image encoder's: its linears and attention as hand-written kernels (`int16_linears`:
    on int16 codes where the CPU has pair dot products), the rest legalized by TVM and split
    across the cores."""
    config = KernelConfig.for_target(target)

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            seq = tvm.transform.Sequential(
                [encoder_kernels_cpu(config, int16_linears)]
                + cpu_generic.legalize_passes(target)
                # polynomial tanh and exp, which LLVM vectorizes (libm's are scalar calls)
                + [tvm.relax.transform.FastMathTransform(), parallel_loops_cpu()]
                + cpu_generic.dataflow_lower_passes(target)
                + finalize_passes(target)
            )
            return seq(mod)

    return _pipeline
