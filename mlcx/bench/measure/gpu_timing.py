"""Seconds each dispatch of a batch takes on a wgpu device, two ways.

`timestamp_times`: one compute pass per dispatch with begin/end timestamps (the pass-level
`timestamp_writes`; wgpu-py 0.32 has no timestamp writes inside a pass), all in one command
buffer and one submit, resolved into a buffer and read back. Needs the device's
timestamp-query feature. `wall_times`: each dispatch submitted alone and waited for; includes
the submit and the read-back that waits, for adapters without timestamps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from mlcx.runtime.backends.wgpu_device import load_wgpu
from mlcx.runtime.backends.wgpu_kernels import Dispatch, KernelSet

TIMESTAMPS = "timestamp-query"
# wgpu's cap on the queries of one query set; a step with more dispatches uses several sets.
QUERIES_PER_SET = 4096

Timer = Callable[[KernelSet, list[Dispatch]], list[float]]


def _timestamp_period(device) -> float:
    """Nanoseconds per timestamp tick. wgpu-native resolves raw ticks and has a getter for the
    period that wgpu-py does not wrap; 1.0 (already ns) when it cannot be asked."""
    try:
        from wgpu.backends.wgpu_native._ffi import lib

        return float(lib.wgpuQueueGetTimestampPeriod(device.queue._internal))
    except (ImportError, AttributeError):
        return 1.0


def _timed_passes(kernels: KernelSet, encoder, chunk: list[tuple[Dispatch, int]], arena):
    """Encode one pass per dispatch writing into a fresh query set; the buffer to read."""
    wgpu = load_wgpu()
    device = kernels.gpu.device
    queries = device.create_query_set(type=wgpu.QueryType.timestamp, count=2 * len(chunk))
    for i, (dispatch, offset) in enumerate(chunk):
        writes = {
            "query_set": queries,
            "beginning_of_pass_write_index": 2 * i,
            "end_of_pass_write_index": 2 * i + 1,
        }
        compute = encoder.begin_compute_pass(timestamp_writes=writes)
        kernels.encode(compute, dispatch, arena, offset)
        compute.end()
    usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    resolved = device.create_buffer(size=16 * len(chunk), usage=usage)
    encoder.resolve_query_set(queries, 0, 2 * len(chunk), resolved, 0)
    return resolved


def timestamp_times(kernels: KernelSet, dispatches: list[Dispatch]) -> list[float]:
    if not dispatches:
        return []
    device = kernels.gpu.device
    arena, offsets = kernels.write_uniforms(dispatches)
    pairs = list(zip(dispatches, offsets, strict=True))
    per_set = QUERIES_PER_SET // 2
    encoder = device.create_command_encoder()
    buffers = [
        _timed_passes(kernels, encoder, pairs[i : i + per_set], arena)
        for i in range(0, len(pairs), per_set)
    ]
    device.queue.submit([encoder.finish()])
    ticks = np.concatenate([np.frombuffer(device.queue.read_buffer(b), np.uint64) for b in buffers])
    spans = ticks.reshape(-1, 2).astype(np.int64)
    nanoseconds = (spans[:, 1] - spans[:, 0]) * _timestamp_period(device)
    return (nanoseconds / 1e9).tolist()


def wall_times(kernels: KernelSet, dispatches: list[Dispatch]) -> list[float]:
    device = kernels.gpu.device
    arena, offsets = kernels.write_uniforms(dispatches)
    # Reading a buffer back waits for every earlier submission (wgpu-py 0.32's
    # on_submitted_work_done_sync fails on its own wgpu-native).
    sentinel = kernels.gpu.buffer(4)
    seconds = []
    for dispatch, offset in zip(dispatches, offsets, strict=True):
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        kernels.encode(compute, dispatch, arena, offset)
        compute.end()
        start = time.perf_counter()
        device.queue.submit([encoder.finish()])
        device.queue.read_buffer(sentinel)
        seconds.append(time.perf_counter() - start)
    return seconds


WALL = "wall time per dispatch"
TIMERS: dict[str, Timer] = {TIMESTAMPS: timestamp_times, WALL: wall_times}


def choose_timer(device_features, timestamps: bool = True) -> str:
    """Timestamps where the device was opened with them (and they are wanted), else wall time."""
    return TIMESTAMPS if timestamps and TIMESTAMPS in device_features else WALL
