"""A one-function WebGPU plan (the embedding model's `embed`, the image encoder's `embed_image`)
run through wgpu-native: the plan checked to take the inputs the runtime sends, its weights
uploaded once, each call's float32 output downloaded and its buffers returned to the pool."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.kernels.step_params import PARAMS
from mlcx.runtime.backends.wgpu_device import BufferPool, GpuDevice
from mlcx.runtime.backends.wgpu_executor import GpuTensor, PlanExecutor
from mlcx.runtime.backends.wgpu_kernels import KernelSet
from mlcx.targets.webgpu_plan.schema import Plan


def load_plan(path: Path, function: str, inputs: tuple[str, ...]) -> Plan:
    """The plan at `path`, whose `function` takes `inputs` and then the weights."""
    try:
        plan = Plan.from_json(path.read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{path} is missing; recompile the model") from None
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{path} is malformed ({err}); recompile") from None
    func = plan.functions.get(function)
    got = tuple(i.name for i in func.inputs) if func else ()
    if got != (*inputs, PARAMS):
        want = ", ".join(inputs)
        raise ArtifactError(f"{path}: {function} takes {got}, not ({want}, weights); recompile")
    return plan


class WgpuModule:
    def __init__(self, plan: Plan, function: str, folder: Path, params_dir: Path, device=None):
        self.function = function
        self.gpu = GpuDevice.open(plan.features, device)
        self.pool = BufferPool(self.gpu)
        self.executor = PlanExecutor(plan, KernelSet(self.gpu, plan, folder), self.pool)
        self.params = [
            GpuTensor(self.gpu.upload(a), tuple(a.shape), str(a.dtype))
            for _, a in load_arrays(params_dir)
        ]

    def _upload(self, array: np.ndarray) -> GpuTensor:
        data = np.ascontiguousarray(array)
        tensor = GpuTensor(self.pool.acquire(data.nbytes), data.shape, str(data.dtype))
        self.gpu.device.queue.write_buffer(tensor.buffer, 0, data)
        return tensor

    def __call__(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """The function's float32 output for `inputs` (by input name)."""
        tensors = {name: self._upload(array) for name, array in inputs.items()}
        result = self.executor.run(self.function, {**tensors, PARAMS: self.params})
        out = self.gpu.download(result.buffer, result.nbytes).view(np.float32)
        for tensor in (*tensors.values(), result):
            self.pool.release(tensor.buffer)
        return out.reshape(result.shape).copy()
