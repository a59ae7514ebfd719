"""Compute pipelines for a plan's kernels, and submitting a batch of dispatches.

Binding layout (TVM's WebGPU codegen): group 0, binding i = the i-th buffer argument (writable
where the kernel writes it), then one uniform holding the scalar arguments (4 bytes each) and
`packGridDimX`. All uniforms of a batch live in one arena, selected by a dynamic offset, so a
bind group depends only on the kernel and its buffers and is reused across steps.
"""

from __future__ import annotations

import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mlcx.runtime.backends.wgpu_device import GpuDevice, load_wgpu
from mlcx.targets.webgpu_plan.schema import Kernel, Plan

MAX_GRID = 65535
_POD_FORMAT = {"int32": "i", "uint32": "I", "float32": "f"}


def native_wgsl(code: str) -> str:
    """A plan shader as wgpu-native takes it: its WGSL front end (naga) has the subgroup
    builtins once the device has the feature, but refuses the directive browsers require."""
    return code.replace("enable subgroups;", "")


@dataclass(frozen=True)
class Dispatch:
    kernel: str
    buffers: tuple
    scalars: tuple
    grid: tuple[int, int, int]


def pack_grid(grid: tuple[int, int, int]) -> tuple[tuple[int, int, int], int]:
    """(dispatch size, packGridDimX): a grid x above the WebGPU limit is folded into z; the
    kernel rebuilds blockIdx.x as z * gridDim.x + x and skips indices past packGridDimX."""
    x, y, z = grid
    if z != 1:
        raise ValueError("blockIdx.z is reserved for folding large grids")
    packed = x
    while x > MAX_GRID:
        x, z = (x + 1) // 2, z * 2
    return (x, y, z), packed


class _Pipeline:
    def __init__(self, gpu: GpuDevice, kernel: Kernel, code: str):
        wgpu = load_wgpu()
        dev = gpu.device
        entries = [
            {
                "binding": i,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": "storage" if write else "read-only-storage"},
            }
            for i, write in enumerate(kernel.write_access)
        ]
        entries.append(
            {
                "binding": kernel.num_buffers,
                "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": "uniform", "has_dynamic_offset": True},
            }
        )
        self.layout = dev.create_bind_group_layout(entries=entries)
        module = dev.create_shader_module(code=native_wgsl(code), label=kernel.name)
        self.pipeline = dev.create_compute_pipeline(
            layout=dev.create_pipeline_layout(bind_group_layouts=[self.layout]),
            compute={"module": module, "entry_point": kernel.name},
        )
        self.pod_format = "<" + "".join(_POD_FORMAT[t] for t in kernel.pod_types) + "I"
        self.pod_bytes = struct.calcsize(self.pod_format)


# Bind groups kept for reuse (they hold their buffers alive); a decode step uses a few hundred.
MAX_BIND_GROUPS = 4096


class KernelSet:
    def __init__(self, gpu: GpuDevice, plan: Plan, root: Path):
        self.gpu = gpu
        # side by side: the driver compiles each pipeline in the calling thread (wgpu-py
        # releases the GIL in its calls and keeps its error capture per thread)
        with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
            made = {
                name: pool.submit(_Pipeline, gpu, k, (root / k.shader).read_text())
                for name, k in plan.kernels.items()
            }
        self.pipelines = {name: future.result() for name, future in made.items()}
        self.align = gpu.limits.get("min-uniform-buffer-offset-alignment", 256)
        self.arena = None
        self.bind_groups: dict = {}

    def _arena(self, nbytes: int):
        if self.arena is None or self.arena.size < nbytes:
            wgpu = load_wgpu()
            usage = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
            self.arena = self.gpu.buffer(max(nbytes, 1 << 16) * 2, usage)
            self.bind_groups.clear()
        return self.arena

    def _bind_group(self, name: str, buffers: tuple, arena):
        key = (name, buffers)
        group = self.bind_groups.get(key)
        if group is None:
            pipe = self.pipelines[name]
            entries = [{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(buffers)]
            uniform = {"buffer": arena, "offset": 0, "size": pipe.pod_bytes}
            entries.append({"binding": len(buffers), "resource": uniform})
            group = self.gpu.device.create_bind_group(layout=pipe.layout, entries=entries)
            if len(self.bind_groups) >= MAX_BIND_GROUPS:
                self.bind_groups.clear()  # a stated bound: buffers combine in many ways
            self.bind_groups[key] = group
        return group

    def write_uniforms(self, dispatches: list[Dispatch]) -> tuple[object, list[int]]:
        """Write every dispatch's scalars into the arena; (arena, each one's offset)."""
        blobs, offsets, size = [], [], 0
        for d in dispatches:
            pipe = self.pipelines[d.kernel]
            _, packed = pack_grid(d.grid)
            offsets.append(size)
            blob = struct.pack(pipe.pod_format, *d.scalars, packed)
            blobs.append(blob.ljust(-(-len(blob) // self.align) * self.align, b"\0"))
            size += len(blobs[-1])
        arena = self._arena(size)
        self.gpu.device.queue.write_buffer(arena, 0, b"".join(blobs))
        return arena, offsets

    def encode(self, compute, dispatch: Dispatch, arena, offset: int) -> None:
        """Record one dispatch into a compute pass."""
        compute.set_pipeline(self.pipelines[dispatch.kernel].pipeline)
        group = self._bind_group(dispatch.kernel, dispatch.buffers, arena)
        compute.set_bind_group(0, group, [offset])
        compute.dispatch_workgroups(*pack_grid(dispatch.grid)[0])

    def submit(self, dispatches: list[Dispatch]) -> None:
        """Encode every dispatch into one compute pass and submit it."""
        if not dispatches:
            return
        arena, offsets = self.write_uniforms(dispatches)
        encoder = self.gpu.device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        for d, offset in zip(dispatches, offsets, strict=True):
            self.encode(compute, d, arena, offset)
        compute.end()
        self.gpu.device.queue.submit([encoder.finish()])
