"""WebGPU: a portable plan of WGSL kernels, run by wgpu-native (Python) or a browser tab.

TVM's JavaScript runtime cannot be built from the apache-tvm wheel, so instead of a TVM
library this target writes `webgpu-plan.json` and one .wgsl file per kernel (see
mlcx.targets.webgpu_plan and docs/webgpu.md); mlcx's own executors run it.

Default quantization: q4f16 for Hugging Face sources, gguf-f16 (the file's own blocks, f16
math) for GGUF ones: f16 is what WebGPU GPUs run fastest and it halves activation memory, but it
needs the adapter's shader-f16 feature. For adapters without it (SwiftShader, some phones) pick
f32 activations: --quantization gguf, q4f32 or q0f32.
"""

from __future__ import annotations

from pathlib import Path

import tvm

from mlcx.targets.base import BuildOptions
from mlcx.targets.webgpu_plan.build import PlanBundle, build_plan


class WebGPUTarget:
    name = "webgpu"
    summary = (
        "WebGPU: a plan of WGSL kernels run by wgpu-native (Vulkan/Metal/DX12) or in a "
        "browser (`mlcx web`); f16 by default, f32 quantizations for adapters without shader-f16"
    )
    kernel_kind = "gpu"
    runtime = "wgpu"

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target:
        return tvm.target.Target({"kind": "webgpu"}, host={"kind": "llvm"})

    def default_quantization(self, from_gguf: bool) -> str:
        return "gguf-f16" if from_gguf else "q4f16"

    def build(self, mod: tvm.IRModule, target: tvm.target.Target, options: BuildOptions):
        return build_plan(mod, target, options.subgroups)

    def export(self, executable: PlanBundle, out_dir: Path, options: BuildOptions) -> str:
        return executable.write(out_dir)
