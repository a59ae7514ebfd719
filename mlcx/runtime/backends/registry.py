"""Which runner executes an artifact, by the runtime its target declares."""

from __future__ import annotations

from mlcx.artifact.config import Artifact
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.runner import Runner, RunnerFactory
from mlcx.runtime.backends.tvm_vm import TVMRunner


def _wgpu_runner(
    artifact: Artifact, num_blocks: int, device: str | None, num_state_slots: int
) -> Runner:
    from mlcx.runtime.backends.wgpu_runner import WgpuRunner  # imports wgpu: only when used

    return WgpuRunner(artifact, num_blocks, device, num_state_slots=num_state_slots)


RUNNERS: dict[str, RunnerFactory] = {"tvm": TVMRunner, "wgpu": _wgpu_runner}


def create_runner(
    artifact: Artifact, num_blocks: int, device: str | None = None, num_state_slots: int = 0
) -> Runner:
    """A runner for `artifact` with pages for `num_blocks` KV blocks and, for a hybrid model,
    state tensors of `num_state_slots` slots."""
    runtime = artifact.config.runtime
    if runtime not in RUNNERS:
        raise ArtifactError(
            f"artifacts for target {artifact.config.target!r} run on the {runtime!r} runtime, "
            f"which this install does not have (available: {', '.join(RUNNERS)})"
        )
    return RUNNERS[runtime](artifact, num_blocks, device, num_state_slots)
