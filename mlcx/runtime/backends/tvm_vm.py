"""Runs an artifact's compiled functions with TVM's Relax VM (cpu, cuda, metal).

The runner owns all device memory: the weights, one page tensor per KV layer, sized by the
number of KV blocks the engine's cache manager hands out, and a hybrid model's state tensors,
sized by the number of state slots its state cache hands out.
"""

from __future__ import annotations

import math
import os

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.kernels.step_params import COPY_PAGES, COPY_STATES, DECODE
from mlcx.runtime.backends.decode_graph import DecodeGraphs
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.host_tensors import host_int32
from mlcx.runtime.backends.runner import RunnerMemory, check_state_slots

DEVICES = {"cpu": tvm.cpu, "cuda": tvm.cuda, "metal": tvm.metal}


def use_compiled_threads(tvm_target: dict) -> None:
    """Size TVM's CPU thread pool to the cores the kernels were compiled for.

    Without TVM_NUM_THREADS, TVM starts half as many threads as logical CPUs (it assumes SMT
    siblings), which on a 2-core machine without SMT halves the speed. Must run before the
    first parallel kernel; an explicit TVM_NUM_THREADS wins."""
    cores = tvm_target.get("num-cores")
    if cores and "TVM_NUM_THREADS" not in os.environ:
        os.environ["TVM_NUM_THREADS"] = str(cores)


def _nbytes(tensors) -> int:
    return sum(math.prod(t.shape) * np.dtype(t.dtype).itemsize for t in tensors)


class TVMRunner:
    def __init__(
        self,
        artifact: Artifact,
        num_blocks: int,
        device: str | None = None,
        num_state_slots: int = 0,
    ):
        config = artifact.config
        use_compiled_threads(config.tvm_target)
        kind = device or config.target
        if kind not in DEVICES:
            raise ArtifactError(f"target {config.target!r} does not run on TVM's Relax VM here")
        self.device = DEVICES[kind](0)
        try:
            module = tvm.runtime.load_module(str(artifact.library_path))
        except Exception as err:
            raise ArtifactError(f"cannot load {artifact.library_path} ({err}); recompile") from None
        self.vm = relax.VirtualMachine(module, self.device)
        if config.state_tensors and not self.vm.module.implements_function(COPY_STATES):
            raise ArtifactError(
                f"{artifact.library_path} has state tensors but no {COPY_STATES}; recompile"
            )
        self.params = [
            tvm.runtime.tensor(np.asarray(a), self.device)
            for _, a in load_arrays(artifact.params_dir)
        ]
        # CUDA graphs: one scratch page past the engine's blocks for padding rows
        graphs = config.decode_graph_batch if kind == "cuda" else None
        pages = num_blocks + (1 if graphs else 0)
        self.kv_pages = [
            tvm.runtime.empty(layout.pages_shape(pages), layout.element, self.device)
            for layout in config.kv_layouts
        ]
        self.num_blocks = num_blocks
        # CUDA graphs: one scratch slot past the engine's, likewise
        self.num_state_slots = check_state_slots(artifact, num_state_slots)
        slots = self.num_state_slots + (1 if graphs else 0)
        self._state_bytes = config.state_slot_bytes * slots
        self.states = [
            tvm.runtime.empty(t.slots_shape(slots), t.dtype, self.device)
            for t in config.state_tensors
        ]
        # Converted to FFI arrays once: a Python list would be converted on every call.
        self._kv_arg = tvm_ffi.convert(self.kv_pages)
        self._params_arg = tvm_ffi.convert(self.params)
        self._states_arg = tvm_ffi.convert(self.states) if self.states else None
        self.lora: list[tvm.runtime.Tensor] = []  # adapter slots' weights (set_lora_weights)
        self._lora_arg = None
        self._tail = self._step_tail()
        self._on_host = kind == "cpu"
        self.graphs = None
        if graphs:
            empty = lambda s, d: tvm.runtime.empty(s, d, self.device)  # noqa: E731
            self.graphs = DecodeGraphs(
                empty, graphs, config.context_window, config.page_size, num_blocks, slots - 1
            )

    def memory(self) -> RunnerMemory:
        weights, pages = _nbytes(self.params) + _nbytes(self.lora), _nbytes(self.kv_pages)
        return RunnerMemory(weights, pages, None, self._state_bytes)

    def set_lora_weights(self, arrays: list[np.ndarray]) -> None:
        """The stacked adapter weights the step functions take after the KV pages (and
        states); set before the first step (CUDA graphs keep the addresses they captured)."""
        self.lora = [tvm.runtime.tensor(np.ascontiguousarray(a), self.device) for a in arrays]
        self._lora_arg = tvm_ffi.convert(self.lora)
        self._tail = self._step_tail()

    def _step_tail(self) -> list:
        """What every step function takes after its arrays (step_params.entry_inputs): the KV
        pages, the states and the LoRA weights where there are, the weights."""
        held = [self._states_arg, self._lora_arg]
        return [self._kv_arg, *(arg for arg in held if arg is not None), self._params_arg]

    def _i32(self, array: np.ndarray) -> tvm.runtime.Tensor:
        if array.dtype == np.float32:  # prefill_image's embedding rows
            return tvm.runtime.tensor(np.ascontiguousarray(array), self.device)
        if self._on_host:
            return host_int32(array)
        return tvm.runtime.tensor(np.ascontiguousarray(array, dtype=np.int32), self.device)

    def copy_pages(self, copies: list[tuple[int, int]]) -> None:
        if copies:
            self.vm[COPY_PAGES](self._kv_arg, self._i32(np.array(copies).reshape(-1, 2)))

    def copy_states(self, waves: list[list[tuple[int, int]]]) -> None:
        for wave in waves:
            self.vm[COPY_STATES](self._states_arg, self._i32(np.array(wave).reshape(-1, 2)))

    def _call_decode(self, args: list) -> tvm.runtime.Tensor:
        return self.vm[DECODE](*args, *self._tail)[0]

    def forward(self, batch: ForwardBatch) -> np.ndarray:
        """Logits [rows, vocab] (float32) for the batch's logit rows."""
        self.copy_pages(batch.copies)
        self.copy_states(batch.state_copies)
        if self.graphs is not None and batch.function == DECODE:
            logits = self.graphs.run(batch, self._call_decode)
            if logits is not None:
                return logits.numpy()[: batch.tables.batch_size]
            batch = self.graphs.through_prefill(batch)
        args = [self._i32(a) for a in batch.step_inputs().values()]
        logits = self.vm[batch.function](*args, *self._tail)[0]
        if self._on_host:
            # A view, not a copy: copying 16 rows of the default model's 49152 logits took
            # about 0.2 ms a step. The view keeps the VM's tensor alive while it is read.
            return np.from_dlpack(logits)
        return logits.numpy()
