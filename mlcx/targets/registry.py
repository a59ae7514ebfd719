"""The compilation targets; `mlcx compile --target` choices come from here."""

from __future__ import annotations

from mlcx.targets.android import AndroidTarget
from mlcx.targets.base import Target
from mlcx.targets.cpu import CpuTarget
from mlcx.targets.cuda import CudaTarget
from mlcx.targets.iphone import IPhoneTarget
from mlcx.targets.metal import MetalTarget
from mlcx.targets.vulkan import VulkanTarget
from mlcx.targets.webgpu import WebGPUTarget

_ALL: list[Target] = [
    CpuTarget(),
    CudaTarget(),
    MetalTarget(),
    WebGPUTarget(),
    VulkanTarget(),
    IPhoneTarget(),
    AndroidTarget(),
]
TARGETS: dict[str, Target] = {t.name: t for t in _ALL}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of: {', '.join(TARGETS)}") from None
