"""The Relax pipeline for CPU targets.

1. Linear layers become hand-written kernels with their RMSNorm/SwiGLU input and residual add
   fused in (mlcx.passes.cpu.fuse_linear).
2. TVM's CPU legalization and operator fusion for the rest.
3. A MetaSchedule tuning database, when given, schedules the kernels it has records for.
4. Every kernel still unscheduled gets mlcx's default CPU schedule (parallel outer loops,
   vectorized inner loop).
"""

from __future__ import annotations

import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from mlcx.passes.cpu.fuse_linear import fuse_linear
from mlcx.passes.cpu.fuse_rope_append import fuse_rope_append
from mlcx.passes.cpu.host import KernelConfig
from mlcx.targets.base import BuildOptions


def kernel_config(target: tvm.target.Target, options: BuildOptions) -> KernelConfig:
    return KernelConfig.for_target(target, int16_activations=not options.float_activations)


def graph_passes(target: tvm.target.Target, options: BuildOptions) -> list[tvm.transform.Pass]:
    """Relax-level rewrites before legalization (also used by `mlcx tune` to find tasks)."""
    return [fuse_linear(kernel_config(target, options)), fuse_rope_append()]


def finalize_passes(target: tvm.target.Target) -> list[tvm.transform.Pass]:
    """TVM's CPU finalization without KillAfterLastUse: storage is statically planned, so
    releasing each tensor early saves no memory, while the releases were about a third of
    the VM instructions of a decode step."""
    return [p for p in cpu_generic.finalize_passes(target) if p.info.name != "KillAfterLastUse"]


def cpu_pipeline(target: tvm.target.Target, options: BuildOptions) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            seq = tvm.transform.Sequential(
                graph_passes(target, options)
                + cpu_generic.library_dispatch_passes(target)
                + cpu_generic.legalize_passes(target)
                + cpu_generic.dataflow_lower_passes(target)
                + finalize_passes(target)
            )
            return seq(mod)

    return _pipeline
