"""The Relax pipeline for CPU targets.

1. Linear layers become hand-written kernels with their RMSNorm/SwiGLU input and residual add
   fused in (mlcx.passes.cpu.fuse_linear).
2. TVM's CPU legalization and operator fusion for the rest.
3. A tuning database from `mlcx tune`, when given, schedules the kernels it has records for
   (mlcx.passes.tuning); it also decides step 1: a database tuned with `--kernels all` was
   measured on plain linear layers, so the hand-written ones stay off.
"""

from __future__ import annotations

from dataclasses import replace

import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from mlcx.passes.cpu.fuse_linear import fuse_linear
from mlcx.passes.cpu.fuse_rope_append import fuse_rope_append
from mlcx.passes.cpu.host import KernelConfig
from mlcx.passes.tuning.apply import apply_database
from mlcx.passes.tuning.records import open_db
from mlcx.targets.base import BuildOptions


def kernel_config(target: tvm.target.Target, options: BuildOptions) -> KernelConfig:
    return KernelConfig.for_target(target, int16_activations=not options.float_activations)


def graph_passes(target: tvm.target.Target, options: BuildOptions) -> list[tvm.transform.Pass]:
    """Relax-level rewrites before legalization (also used by `mlcx tune` to find tasks)."""
    linears = [fuse_linear(kernel_config(target, options))] if options.hand_linears else []
    return [*linears, fuse_rope_append()]


def finalize_passes(target: tvm.target.Target) -> list[tvm.transform.Pass]:
    """TVM's CPU finalization without KillAfterLastUse: storage is statically planned, so
    releasing each tensor early saves no memory, while the releases were about a third of
    the VM instructions of a decode step."""
    return [p for p in cpu_generic.finalize_passes(target) if p.info.name != "KillAfterLastUse"]


def cpu_pipeline(target: tvm.target.Target, options: BuildOptions) -> tvm.transform.Pass:
    db = open_db(options.tuning_db) if options.tuning_db else None
    if db is not None:
        options = replace(options, hand_linears=db.hand_linears)
    tuning = [apply_database(db)] if db is not None else []

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            seq = tvm.transform.Sequential(
                graph_passes(target, options)
                + cpu_generic.library_dispatch_passes(target)
                + cpu_generic.legalize_passes(target)
                + tuning
                + cpu_generic.dataflow_lower_passes(target)
                + finalize_passes(target)
            )
            return seq(mod)

    return _pipeline
