"""The host CPU through LLVM, run by TVM's Relax VM."""

from __future__ import annotations

import os
from pathlib import Path

import tvm
from tvm.target import codegen

from mlcx.passes import tir_pipeline
from mlcx.passes.pipeline_cpu import cpu_pipeline
from mlcx.targets.base import BuildOptions


class CpuTarget:
    name = "cpu"
    summary = "this machine's CPU (LLVM, host features detected); a shared library"
    kernel_kind = "cpu"
    runtime = "tvm"

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target:
        cores = options.num_threads or os.cpu_count() or 1
        return tvm.target.Target(
            {"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": cores}
        )

    def default_quantization(self, from_gguf: bool) -> str:
        return "gguf" if from_gguf else "q4f32"

    def build(self, mod, target, options):
        if options.linear_kernels is None:  # a bug, not a user's mistake
            raise ValueError("build options come from mlcx.compile.model.resolve_options")
        pipeline = cpu_pipeline(target, options.linear_kernels, options.tuning_db)
        return tvm.compile(
            mod, target=target, relax_pipeline=pipeline, tir_pipeline=tir_pipeline.NAME
        )

    def export(self, executable, out_dir: Path, options: BuildOptions) -> str:
        name = "model-cpu.so"
        executable.export_library(str(out_dir / name))
        return name
