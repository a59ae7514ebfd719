"""The Relax pipeline for CPU targets."""

from __future__ import annotations

import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from mlcx.targets.base import BuildOptions


def cpu_pipeline(target: tvm.target.Target, options: BuildOptions) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            seq = tvm.transform.Sequential(
                cpu_generic.library_dispatch_passes(target)
                + cpu_generic.legalize_passes(target)
                + cpu_generic.dataflow_lower_passes(target)
                + cpu_generic.finalize_passes(target)
            )
            return seq(mod)

    return _pipeline
