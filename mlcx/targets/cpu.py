"""The host CPU through LLVM, run by TVM's Relax VM."""

from __future__ import annotations

import os
from pathlib import Path

import tvm
from tvm.target import codegen

from mlcx.passes import tir_pipeline
from mlcx.passes.pipeline_cpu import cpu_pipeline
from mlcx.targets.base import BuildOptions
from mlcx.targets.llvm_objects import compile_cpu

# LLVM tuning flags by the host's architecture (the triple's first field). On x86, LLVM's
# machine combiner splits each vpdpwssd into vpmaddwd + vpaddd to shorten one accumulator's
# dependence chain; mlcx's int16 kernels keep 8 and more independent accumulators, so the split
# only adds instructions: +fast-dpwssd keeps the one instruction (the int16 prefill kernels
# 1.2-1.33x faster on one Sapphire Rapids core; no effect on CPUs without VNNI).
HOST_TUNING: dict[str, tuple[str, ...]] = {"x86_64": ("+fast-dpwssd",)}


def llvm_target(cpu: str, cores: int, triple: str | None = None) -> tvm.target.Target:
    """The LLVM target of `cpu` (an LLVM CPU name) on a `triple` host (default: this one)."""
    arch = (triple or codegen.llvm_get_system_triple()).split("-")[0]
    attrs: dict = {"kind": "llvm", "mcpu": cpu, "num-cores": cores}
    if triple is not None:
        attrs["mtriple"] = triple
    if arch in HOST_TUNING:
        attrs["mattr"] = list(HOST_TUNING[arch])
    return tvm.target.Target(attrs)


class CpuTarget:
    name = "cpu"
    summary = "this machine's CPU (LLVM, host features detected); a shared library"
    kernel_kind = "cpu"
    runtime = "tvm"

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target:
        cores = options.num_threads or os.cpu_count() or 1
        return llvm_target(codegen.llvm_get_system_cpu(), cores)

    def default_quantization(self, from_gguf: bool) -> str:
        return "gguf" if from_gguf else "q4f32"

    def build(self, mod, target, options):
        if options.linear_kernels is None:  # a bug, not a user's mistake
            raise ValueError("build options come from mlcx.compile.model.resolve_options")
        pipeline = cpu_pipeline(target, options.linear_kernels, options.tuning_db)
        return compile_cpu(mod, target, pipeline, tir_pipeline.NAME)

    def export(self, executable, out_dir: Path, options: BuildOptions) -> str:
        name = "model-cpu.so"
        executable.export_library(str(out_dir / name))
        return name
