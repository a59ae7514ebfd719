"""Runs an artifact's image encoder from its WebGPU plan (vision/webgpu-plan.json) through
wgpu-native: the weights stay on the GPU, the pixels go up and the image rows come back."""

from __future__ import annotations

import numpy as np

from mlcx.artifact.encoder import EncoderConfig, encoder_dir
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.kernels.step_params import EMBED_IMAGE, PARAMS, PIXELS
from mlcx.runtime.backends.wgpu_device import BufferPool, GpuDevice
from mlcx.runtime.backends.wgpu_executor import GpuTensor, PlanExecutor
from mlcx.runtime.backends.wgpu_kernels import KernelSet
from mlcx.targets.webgpu_plan.schema import Plan


def load_encoder_plan(path, inputs: tuple[str, ...] = (PIXELS,)) -> Plan:
    try:
        plan = Plan.from_json(path.read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{path} is missing; recompile the model") from None
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{path} is malformed ({err}); recompile") from None
    func = plan.functions.get(EMBED_IMAGE)
    got = tuple(i.name for i in func.inputs) if func else ()
    if got != (*inputs, PARAMS):
        want = ", ".join(inputs)
        raise ArtifactError(f"{path}: {EMBED_IMAGE} takes {got}, not ({want}, weights); recompile")
    return plan


class WgpuEncoderRunner:
    def __init__(self, artifact_dir, config: EncoderConfig, device: str | None = None):
        folder = encoder_dir(artifact_dir)
        plan = load_encoder_plan(folder / config.library, config.inputs)
        self.gpu = GpuDevice.open(plan.features, device)
        self.pool = BufferPool(self.gpu)
        self.executor = PlanExecutor(plan, KernelSet(self.gpu, plan, folder), self.pool)
        self.params = [
            GpuTensor(self.gpu.upload(a), tuple(a.shape), str(a.dtype))
            for _, a in load_arrays(folder / "params")
        ]

    def _upload(self, array: np.ndarray) -> GpuTensor:
        data = np.ascontiguousarray(array)
        tensor = GpuTensor(self.pool.acquire(data.nbytes), data.shape, str(data.dtype))
        self.gpu.device.queue.write_buffer(tensor.buffer, 0, data)
        return tensor

    def embed(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        tensors = {name: self._upload(array) for name, array in inputs.items()}
        rows = self.executor.run(EMBED_IMAGE, {**tensors, PARAMS: self.params})
        out = self.gpu.download(rows.buffer, rows.nbytes).view(np.float32)
        for tensor in (*tensors.values(), rows):
            self.pool.release(tensor.buffer)
        return out.reshape(rows.shape).copy()
