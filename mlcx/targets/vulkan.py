"""Vulkan: the WebGPU plan, executed through wgpu-native's Vulkan backend.

No apache-tvm wheel has Vulkan (SPIR-V) codegen, so this target compiles exactly what the
webgpu target does and its artifacts ask the runtime for a Vulkan adapter.
"""

from __future__ import annotations

from mlcx.targets.webgpu import WebGPUTarget


class VulkanTarget(WebGPUTarget):
    name = "vulkan"
    summary = (
        "Vulkan GPUs: the WebGPU plan (WGSL kernels) run through wgpu-native's Vulkan backend; "
        "no apache-tvm wheel has Vulkan codegen"
    )
