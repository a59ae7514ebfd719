"""Which runner executes an artifact, by the runtime its target declares."""

from __future__ import annotations

from collections.abc import Callable

from mlcx.artifact.config import Artifact
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.tvm_vm import TVMRunner, kv_block_bytes

RunnerFactory = Callable[[Artifact, int, str | None], object]

RUNNERS: dict[str, RunnerFactory] = {
    "tvm": lambda artifact, blocks, device: TVMRunner(artifact, blocks, device),
    "wgpu": lambda artifact, blocks, device: _wgpu_runner()(artifact, blocks, device),
}

__all__ = ["RUNNERS", "create_runner", "kv_block_bytes"]


def _wgpu_runner():
    from mlcx.runtime.backends.wgpu_runner import WgpuRunner  # needs the optional wgpu package

    return WgpuRunner


def create_runner(artifact: Artifact, num_blocks: int, device: str | None = None):
    runtime = artifact.config.runtime
    if runtime not in RUNNERS:
        raise ArtifactError(
            f"artifacts for target {artifact.config.target!r} run on the {runtime!r} runtime, "
            f"which this install does not have (available: {', '.join(RUNNERS)})"
        )
    return RUNNERS[runtime](artifact, num_blocks, device)
