"""`mlcx devices`: what this machine can run, and which mlcx targets run on each device.

Three sources, each optional: the CPU (LLVM's view of it), CUDA GPUs (through TVM's CUDA
runtime, present only where a driver is), and wgpu adapters (Vulkan/Metal/DX12/GL, needs
the `wgpu` package). Software adapters (llvmpipe/lavapipe, SwiftShader, WARP) are marked, as
they run WebGPU plans correctly but slowly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import tvm
from tvm.target import codegen

from mlcx.targets.registry import TARGETS

# CPU features that decide kernel speed (x86 and Arm spellings as LLVM names them).
CPU_FEATURES = (
    "sse4.2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vnni",
    "avx512bf16",
    "avxvnni",
    "amx-tile",
    "neon",
    "fullfp16",
    "dotprod",
    "i8mm",
    "bf16",
    "sve",
    "sve2",
    "sme",
)
# Which targets a wgpu backend executes (the WebGPU plan runtime picks the backend).
WGPU_BACKEND_TARGETS = {"Vulkan": ("webgpu", "vulkan"), "Metal": ("webgpu",), "D3D12": ("webgpu",)}
MAX_CUDA_DEVICES = 16


@dataclass(frozen=True)
class Device:
    kind: str  # "cpu", "cuda" or "wgpu"
    name: str
    details: dict[str, str] = field(default_factory=dict)
    targets: tuple[str, ...] = ()  # mlcx targets that run on this device
    software: bool = False


@dataclass(frozen=True)
class DeviceReport:
    devices: tuple[Device, ...]
    notes: tuple[str, ...]  # why a source found nothing (no driver, package missing)


def _available(targets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t in targets if t in TARGETS)


def cpu_devices() -> tuple[list[Device], list[str]]:
    cpu = codegen.llvm_get_system_cpu()
    target = tvm.target.Target({"kind": "llvm", "mcpu": cpu})
    features = set(codegen.llvm_get_cpu_features(target))
    details = {
        "triple": codegen.llvm_get_system_triple(),
        "cores": str(os.cpu_count()),
        "features": " ".join(f for f in CPU_FEATURES if f in features) or "baseline",
    }
    return [Device("cpu", cpu, details, _available(("cpu",)))], []


def cuda_devices() -> tuple[list[Device], list[str]]:
    found = []
    for index in range(MAX_CUDA_DEVICES):
        dev = tvm.cuda(index)
        if not dev.exist:
            break
        details = {
            "arch": "sm_" + dev.compute_version.replace(".", ""),
            "memory": f"{dev.total_global_memory / 2**30:.1f} GiB",
        }
        found.append(Device("cuda", f"cuda:{index} {dev.device_name}", details, ("cuda",)))
    note = [] if found else ["no CUDA GPU (no NVIDIA driver, or TVM's CUDA runtime not loaded)"]
    return found, note


def _adapter(info: dict) -> Device:
    backend, kind = str(info.get("backend_type", "")), str(info.get("adapter_type", ""))
    details = {"backend": backend, "type": kind, "driver": str(info.get("description", ""))}
    name = str(info.get("device") or info.get("vendor") or "adapter")
    targets = _available(WGPU_BACKEND_TARGETS.get(backend, ()))
    return Device("wgpu", name, details, targets, software=kind == "CPU")


def wgpu_devices() -> tuple[list[Device], list[str]]:
    import wgpu

    adapters = wgpu.gpu.enumerate_adapters_sync()
    found = [_adapter(dict(a.info)) for a in adapters]
    return found, [] if found else ["wgpu found no adapter (no Vulkan/Metal/DX12/GL driver)"]


SOURCES: dict[str, Callable[[], tuple[list[Device], list[str]]]] = {
    "cpu": cpu_devices,
    "cuda": cuda_devices,
    "wgpu": wgpu_devices,
}


def list_devices() -> DeviceReport:
    devices: list[Device] = []
    notes: list[str] = []
    for source in SOURCES.values():
        found, why = source()
        devices += found
        notes += why
    return DeviceReport(tuple(devices), tuple(notes))
