"""A wgpu device for running WebGPU plans, and a pool of reusable storage buffers.

Any wgpu-native adapter works (Vulkan, Metal, DX12, GL); on Linux without a GPU, Mesa's
lavapipe (`mesa-vulkan-drivers`) is a Vulkan adapter on the CPU.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from mlcx.errors import ArtifactError, ToolchainError

log = logging.getLogger(__name__)

# Limits a plan may need beyond WebGPU's defaults; each is raised to what the adapter allows.
RAISED_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-storage-buffers-per-shader-stage",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
)
# WebGPU feature names in a plan -> wgpu-native's names, and what to do without them.
NATIVE_FEATURES = {"shader-f16": "shader-f16", "subgroups": "subgroup"}
WITHOUT = {
    "shader-f16": (
        "recompile with f32 activations (--quantization gguf, q4f32 or q0f32) and a KV cache "
        "other than float16 (--kv-dtype float32 or int8)"
    ),
    "subgroups": "recompile with --no-subgroups",
}


def load_wgpu():
    import wgpu  # a dependency of the plain install; imported when a GPU runner starts

    return wgpu


def _pick_adapter(wgpu, backend: str | None):
    adapters = wgpu.gpu.enumerate_adapters_sync()
    if backend:
        adapters = [a for a in adapters if a.info["backend_type"].lower() == backend.lower()]
    if not adapters:
        want = f"{backend} adapter" if backend else "adapter"
        raise ToolchainError(
            f"wgpu found no {want}; on Linux install Vulkan drivers (Debian: mesa-vulkan-drivers "
            "libvulkan1, see scripts/setup-system.sh)"
        )
    rank = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
    return min(
        adapters,
        key=lambda a: (rank.get(a.info["adapter_type"], 4), a.info["backend_type"] == "OpenGL"),
    )


@dataclass
class GpuDevice:
    device: object
    adapter_name: str
    backend: str
    limits: dict

    @classmethod
    def open(
        cls, features: tuple[str, ...], backend: str | None = None, optional: tuple[str, ...] = ()
    ) -> GpuDevice:
        """`features`: what the plan needs (an error without them); `optional`: native
        features turned on where the adapter has them (e.g. timestamp-query, for profiling)."""
        wgpu = load_wgpu()
        adapter = _pick_adapter(wgpu, backend)
        name = f"{adapter.info['device']} ({adapter.info['backend_type']})"
        native = [NATIVE_FEATURES.get(f, f) for f in features]
        missing = [f for f, n in zip(features, native, strict=True) if n not in adapter.features]
        if missing:
            advice = "; ".join(WITHOUT.get(f, f"use an adapter with {f}") for f in missing)
            raise ArtifactError(
                f"this artifact's kernels need WebGPU feature(s) {missing}, which {name} lacks; "
                f"{advice}"
            )
        native += [f for f in optional if f in adapter.features and f not in native]
        limits = {k: adapter.limits[k] for k in RAISED_LIMITS if k in adapter.limits}
        device = adapter.request_device_sync(required_features=native, required_limits=limits)
        log.info("WebGPU plan runs on %s", name)
        return cls(device, name, adapter.info["backend_type"], dict(device.limits))

    def buffer(self, nbytes: int, usage=None):
        wgpu = load_wgpu()
        if usage is None:
            usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        return self.device.create_buffer(size=max(4, _align(nbytes, 4)), usage=usage)

    def upload(self, array: np.ndarray):
        data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        if data.size % 4:
            data = np.concatenate([data, np.zeros(4 - data.size % 4, np.uint8)])
        buffer = self.buffer(data.size)
        if data.size:
            self.device.queue.write_buffer(buffer, 0, data)
        return buffer

    def download(self, buffer, nbytes: int) -> np.ndarray:
        raw = self.device.queue.read_buffer(buffer, 0, _align(nbytes, 4))
        return np.frombuffer(raw, np.uint8)[:nbytes]


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def size_class(nbytes: int) -> int:
    """Pool buckets: powers of two up to 64 MiB, then whole MiB (waste stays below 2x)."""
    n = max(256, nbytes)
    if n <= 64 << 20:
        return 1 << (n - 1).bit_length()
    return _align(n, 1 << 20)


class BufferPool:
    """Storage buffers by size class; `release` makes one reusable by later steps and calls.

    Reuse within one command stream is safe: WebGPU orders the dispatches that touch a
    buffer, and queue writes land after earlier submissions.
    """

    def __init__(self, gpu: GpuDevice):
        self.gpu = gpu
        self.free: dict[int, list] = defaultdict(list)
        self.bytes = 0

    def acquire(self, nbytes: int):
        size = size_class(nbytes)
        if self.free[size]:
            return self.free[size].pop()
        self.bytes += size
        return self.gpu.buffer(size)

    def release(self, buffer) -> None:
        self.free[buffer.size].append(buffer)
