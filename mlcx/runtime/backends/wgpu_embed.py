"""Runs an embedding artifact compiled for webgpu (its `embed` plan) through wgpu-native: the
weights stay on the GPU, each batch's padded arrays go up and only the pooled vectors come back.
The browser runs the same plan (web/src/embedding_runner.js)."""

from __future__ import annotations

import numpy as np

from mlcx.artifact.embedding_config import EmbeddingArtifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.frontends.nn.embedding_model import EMBED, EMBED_INPUTS
from mlcx.kernels.step_params import PARAMS
from mlcx.runtime.backends.embed_batch import EmbedBatch
from mlcx.runtime.backends.wgpu_device import BufferPool, GpuDevice
from mlcx.runtime.backends.wgpu_executor import GpuTensor, PlanExecutor
from mlcx.runtime.backends.wgpu_kernels import KernelSet
from mlcx.targets.webgpu_plan.schema import Plan


def load_embed_plan(path) -> Plan:
    try:
        plan = Plan.from_json(path.read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{path} is missing; recompile the model") from None
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{path} is malformed ({err}); recompile") from None
    func = plan.functions.get(EMBED)
    got = tuple(i.name for i in func.inputs) if func else ()
    if got != (*EMBED_INPUTS, PARAMS):
        raise ArtifactError(f"{path}: {EMBED} takes {got}, not {EMBED_INPUTS}; recompile")
    return plan


class WgpuEmbedRunner:
    def __init__(self, artifact: EmbeddingArtifact, device: str | None = None):
        plan = load_embed_plan(artifact.library_path)
        self.gpu = GpuDevice.open(plan.features, device)
        self.pool = BufferPool(self.gpu)
        self.executor = PlanExecutor(plan, KernelSet(self.gpu, plan, artifact.path), self.pool)
        self.params = [
            GpuTensor(self.gpu.upload(a), tuple(a.shape), str(a.dtype))
            for _, a in load_arrays(artifact.params_dir)
        ]

    def _upload(self, array: np.ndarray) -> GpuTensor:
        data = np.ascontiguousarray(array)
        tensor = GpuTensor(self.pool.acquire(data.nbytes), data.shape, str(data.dtype))
        self.gpu.device.queue.write_buffer(tensor.buffer, 0, data)
        return tensor

    def run(self, batch: EmbedBatch) -> np.ndarray:
        """Pooled vectors [batch, hidden] float32 (not normalized), as EmbedRunner.run."""
        inputs = {
            name: self._upload(a) for name, a in zip(EMBED_INPUTS, batch.arrays(), strict=True)
        }
        pooled = self.executor.run(EMBED, {**inputs, PARAMS: self.params})
        out = self.gpu.download(pooled.buffer, pooled.nbytes).view(np.float32)
        for tensor in (*inputs.values(), pooled):
            self.pool.release(tensor.buffer)
        return out.reshape(pooled.shape).copy()
