"""`mlcx bench --profile`: time per kernel of one prefill and one decode step, by runtime: a
WebGPU plan's here, TVM's Relax VM's in mlcx.bench.measure.vm_profile.

For one step, the runner's `KernelSet.submit` is shadowed by a recorder that times every
dispatch it is handed (mlcx.bench.measure.gpu_timing) instead of sending them in one pass; the
executor is untouched, so the dispatches are exactly those a normal step launches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.bench.measure.gpu_timing import TIMERS, TIMESTAMPS, Timer, choose_timer
from mlcx.bench.measure.kernel_profile import StepProfile, profile_two_steps
from mlcx.bench.measure.mlcx_engine import kv_blocks
from mlcx.bench.measure.vm_profile import profile_vm
from mlcx.bench.workloads.workload import Workload
from mlcx.targets.registry import TARGETS


class _Recorder:
    """Stands in for `KernelSet.submit`: times each dispatch and remembers (kernel, seconds)."""

    def __init__(self, kernels, timer: Timer):
        self.kernels = kernels
        self.timer = timer
        self.samples: list[tuple[str, float]] = []

    def __call__(self, dispatches) -> None:
        seconds = self.timer(self.kernels, dispatches)
        self.samples += [(d.kernel, s) for d, s in zip(dispatches, seconds, strict=True)]


@contextmanager
def recording(kernels, timer: Timer) -> Iterator[list[tuple[str, float]]]:
    """Within the block, every batch `kernels` is asked to submit is timed dispatch by dispatch."""
    recorder = _Recorder(kernels, timer)
    kernels.submit = recorder  # an instance attribute shadows the method until deleted
    try:
        yield recorder.samples
    finally:
        del kernels.submit


def _profile_plan(artifact: Artifact, workload: Workload, timestamps: bool):
    from mlcx.runtime.backends.wgpu_runner import WgpuRunner  # needs the optional wgpu package

    blocks = kv_blocks(artifact, workload)
    runner = WgpuRunner(artifact, blocks, optional_features=(TIMESTAMPS,), num_state_slots=1)
    method = choose_timer(runner.gpu.device.features, timestamps)
    ids = workload.prompt_ids(artifact.config.model.vocab_size)
    timed = partial(recording, runner.executor.kernels, TIMERS[method])
    return profile_two_steps(runner, artifact, blocks, ids, timed, method)


# Runtime -> profiler of one prefill and one decode step.
PROFILERS: dict[str, Callable[[Artifact, Workload, bool], tuple[StepProfile, ...]]] = {
    "wgpu": _profile_plan,
    "tvm": profile_vm,
}


def check_profilable(target: str) -> None:
    if TARGETS[target].runtime not in PROFILERS:
        targets = ", ".join(t for t, spec in TARGETS.items() if spec.runtime in PROFILERS)
        raise ValueError(
            f"--profile times the kernels of targets {targets}; "
            f"{target} artifacts run on {TARGETS[target].runtime}"
        )


def profile_steps(
    artifact_dir: Path, workload: Workload, timestamps: bool = True
) -> tuple[StepProfile, ...]:
    """Per-kernel times of one prefill of the workload's prompt and one decode step after it;
    `timestamps=False` times by wall clock even where the adapter has timestamp queries."""
    artifact = Artifact(artifact_dir)
    check_profilable(artifact.config.target)
    return PROFILERS[artifact.config.runtime](artifact, workload, timestamps)
