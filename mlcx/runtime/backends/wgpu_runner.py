"""Runs a WebGPU-plan artifact (targets webgpu and vulkan) through wgpu-native.

A Runner (backends/runner.py), as TVMRunner is: the engine's KV cache manager decides pages,
this runner keeps the weights, one page buffer per KV layer and a hybrid model's state
tensors on the GPU and runs the plan's prefill, decode, copy_pages (and copy_states) functions;
only the step arrays go up and only the logits come back.
"""

from __future__ import annotations

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.artifact.state_tensors import StateTensor
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.kernels.kv_layout import KVLayout
from mlcx.kernels.step_params import (
    COPY_PAGES,
    COPY_STATES,
    DECODE,
    KV_PAGES,
    LORA_WEIGHTS,
    PARAMS,
    PREFILL,
    STATES,
    entry_inputs,
)
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.runner import RunnerMemory, check_state_slots
from mlcx.runtime.backends.wgpu_device import BufferPool, GpuDevice
from mlcx.runtime.backends.wgpu_executor import GpuTensor, PlanExecutor
from mlcx.runtime.backends.wgpu_kernels import KernelSet
from mlcx.targets.webgpu_plan.schema import Plan

# The wgpu backend each target asks for; None: the best adapter of any backend.
TARGET_BACKENDS = {"vulkan": "vulkan", "webgpu": None}


def load_plan(artifact: Artifact) -> Plan:
    try:
        plan = Plan.from_json(artifact.library_path.read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{artifact.library_path} is missing; recompile the model") from None
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{artifact.library_path} is malformed ({err}); recompile") from None
    states, lora = bool(artifact.config.state_tensors), artifact.config.lora is not None
    mrope = bool(artifact.config.model.mrope_sections)
    for name in (PREFILL, DECODE):
        _check_inputs(plan, name, artifact, entry_inputs(name, states, lora, mrope=mrope))
    if artifact.config.state_tensors and COPY_STATES not in plan.functions:
        raise ArtifactError(
            f"{artifact.library_path} has state tensors but no {COPY_STATES}; recompile the model"
        )
    return plan


def _check_inputs(plan: Plan, name: str, artifact: Artifact, want: tuple[str, ...]) -> None:
    """The plan's step function takes the inputs this runtime passes (step_params)."""
    func = plan.functions.get(name)
    got = tuple(i.name for i in func.inputs) if func else ()
    if got != want:
        raise ArtifactError(
            f"{artifact.library_path}: {name} takes ({', '.join(got)}), this mlcx passes "
            f"({', '.join(want)}); recompile the model"
        )


class WgpuRunner:
    def __init__(
        self,
        artifact: Artifact,
        num_blocks: int,
        device: str | None = None,
        optional_features: tuple[str, ...] = (),
        num_state_slots: int = 0,
    ):
        config = artifact.config
        self.plan = load_plan(artifact)
        backend = device if device is not None else TARGET_BACKENDS.get(config.target)
        self.gpu = GpuDevice.open(self.plan.features, backend, optional_features)
        self.pool = BufferPool(self.gpu)
        self.executor = PlanExecutor(
            self.plan, KernelSet(self.gpu, self.plan, artifact.path), self.pool
        )
        self.params = [self._persistent(a) for _, a in load_arrays(artifact.params_dir)]
        self.kv_pages = [self._pages(layout, num_blocks) for layout in config.kv_layouts]
        self.num_blocks = num_blocks
        slots = check_state_slots(artifact, num_state_slots)
        self.states = [self._state_tensor(t, slots) for t in config.state_tensors]
        self._states = {STATES: self.states} if self.states else {}
        self.lora: dict[str, list[GpuTensor]] = {}  # the adapter slots' weights, if any

    def _state_tensor(self, tensor: StateTensor, slots: int) -> GpuTensor:
        nbytes = tensor.slot_bytes * slots
        self._check_binding(nbytes, f"state tensor {tensor.key} of {slots} slots (fewer slots)")
        return GpuTensor(self.gpu.buffer(nbytes), tensor.slots_shape(slots), tensor.dtype)

    def set_lora_weights(self, arrays: list[np.ndarray]) -> None:
        """The stacked adapter weights the step functions take after the KV pages."""
        self.lora = {LORA_WEIGHTS: [self._persistent(a) for a in arrays]}

    def memory(self) -> RunnerMemory:
        def total(tensors):
            return sum(t.buffer.size for t in tensors)

        weights = total(self.params) + total(self.lora.get(LORA_WEIGHTS, []))
        return RunnerMemory(weights, total(self.kv_pages), self.pool.bytes, total(self.states))

    def _check_binding(self, nbytes: int, what: str) -> None:
        limit = self.gpu.limits.get("max-storage-buffer-binding-size", 1 << 27)
        if nbytes > limit:
            raise ArtifactError(
                f"{what} needs {nbytes} bytes in one buffer; {self.gpu.adapter_name} binds at "
                f"most {limit}"
            )

    def _pages(self, layout: KVLayout, num_blocks: int) -> GpuTensor:
        """One KV layer's pages (ArtifactConfig.kv_layouts)."""
        page = layout.pages_bytes(num_blocks)
        self._check_binding(page, "one layer's KV pages (lower the KV cache size)")
        return GpuTensor(self.gpu.buffer(page), layout.pages_shape(num_blocks), layout.element)

    def _persistent(self, array: np.ndarray) -> GpuTensor:
        self._check_binding(array.nbytes, f"a weight of shape {array.shape}")
        return GpuTensor(self.gpu.upload(array), tuple(array.shape), str(array.dtype))

    def _i32(self, array: np.ndarray) -> GpuTensor:
        """A step array on the GPU: int32, but prefill_image's embedding rows (float32)."""
        dtype = np.float32 if array.dtype == np.float32 else np.int32
        data = np.ascontiguousarray(array, dtype=dtype)
        buffer = self.pool.acquire(data.nbytes)
        if data.size:
            self.gpu.device.queue.write_buffer(buffer, 0, data)
        return GpuTensor(buffer, tuple(data.shape), str(data.dtype))

    def copy_pages(self, copies: list[tuple[int, int]]) -> None:
        if not copies:
            return
        pairs = self._i32(np.array(copies).reshape(-1, 2))
        self.executor.run(COPY_PAGES, {KV_PAGES: self.kv_pages, "pairs": pairs})
        self.pool.release(pairs.buffer)

    def copy_states(self, waves: list[list[tuple[int, int]]]) -> None:
        for wave in waves:
            pairs = self._i32(np.array(wave).reshape(-1, 2))
            self.executor.run(COPY_STATES, {STATES: self.states, "pairs": pairs})
            self.pool.release(pairs.buffer)

    def forward(self, batch: ForwardBatch) -> np.ndarray:
        """Logits [rows, vocab] (float32) for the batch's logit rows."""
        self.copy_pages(batch.copies)
        self.copy_states(batch.state_copies)
        steps = {name: self._i32(a) for name, a in batch.step_inputs().items()}
        held = {KV_PAGES: self.kv_pages, **self._states, **self.lora}
        inputs = {**steps, **held, PARAMS: self.params}
        logits = self.executor.run(batch.function, inputs)[0]
        out = self.gpu.download(logits.buffer, logits.nbytes).view(np.float32)
        for tensor in [logits, *steps.values()]:
            self.pool.release(tensor.buffer)
        return out.reshape(logits.shape).copy()
