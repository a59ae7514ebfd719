"""Times an mlcx artifact: its compiled prefill and decode functions through the runner its
target declares (TVM's VM for cpu/cuda/metal, wgpu-native for a WebGPU plan).

The loop mirrors what the engine does per step (page tables from the KV cache manager, one
forward, greedy argmax) without the sampler and detokenizer, as the llama.cpp peer is driven
through its low-level eval too.
"""

from __future__ import annotations

import gc
import resource
import time
from pathlib import Path

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.bench.workloads.workload import RunTiming, Workload
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.registry import create_runner
from mlcx.runtime.kv import KVCacheManager

# What each runtime runs on, in words, for the report.
DEVICE_NAMES = {
    "tvm": lambda runner, artifact: artifact.config.target,
    "wgpu": lambda runner, artifact: runner.gpu.adapter_name,
}


# stacked over experts (mlcx.kernels.moe), and their biases (a value per stacked row)
EXPERT_PARAMS = (".moe.gate_up", ".moe.down")


def weight_bytes_per_token(artifact: Artifact, routed: bool = True) -> int:
    """Bytes of weights one decode step reads: every matrix (and the head); an untied
    embedding table is only looked up, one row per token. Of a mixture of experts' stacked
    weights a token reads its experts' share (`routed`), or every expert's (not `routed`:
    what a dense model of the same size reads)."""
    model = artifact.config.model
    share = model.experts_per_token / model.num_experts if routed and model.num_experts else 1
    total = 0.0
    for name, array in load_arrays(artifact.params_dir):
        if model.tie_word_embeddings or not name.startswith("embed."):
            expert = any(part in name for part in EXPERT_PARAMS)
            total += np.asarray(array).nbytes * (share if expert else 1)
    return int(total)


def expert_notes(artifact: Artifact, routed: int) -> list[str]:
    """For a mixture of experts: the `routed` bytes a decode step reads (weight_bytes_per_token)
    against the dense equivalent."""
    model = artifact.config.model
    if not model.num_experts:
        return []
    dense = weight_bytes_per_token(artifact, routed=False)
    return [
        f"mixture of experts: a decode step reads {model.experts_per_token} of "
        f"{model.num_experts} experts, {routed / 1e6:.1f} MB of weights a token against "
        f"{dense / 1e6:.1f} MB for every expert (the dense equivalent, {dense / routed:.1f}x)"
    ]


def peak_memory_bytes() -> int:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def kv_blocks(artifact: Artifact, workload: Workload) -> int:
    """KV blocks one run needs: its prompt and decoded tokens, and a spare page."""
    return (workload.prompt_tokens + workload.decode_tokens) // artifact.config.page_size + 2


class GreedySequence:
    """One batch-1 sequence on a runner: `prefill` its ids, then one greedy token per `decode`."""

    def __init__(self, runner, artifact: Artifact, blocks: int, ids: list[int]):
        self.runner = runner
        self.kv = KVCacheManager(blocks, artifact.config.page_size, False)
        self.kv.add_sequence(0, ids)
        # a hybrid model's one state slot (starting from zero at position 0 on every run)
        self.state_slots = np.zeros(1, np.int32) if artifact.config.state_tensors else None
        self.tokens = list(ids)
        self.next_token = -1
        self.chunk = artifact.config.prefill_chunk  # the most tokens a compiled step takes

    def _step(self, new: list[int]) -> None:
        self.kv.append(0, len(new))
        tables = self.kv.build_arrays([(0, len(new))])
        batch = ForwardBatch(np.array(new, np.int32), tables, state_slots=self.state_slots)
        self.next_token = int(self.runner.forward(batch)[-1].argmax())

    def prefill(self) -> None:
        """The prompt in steps of the compiled chunk, as the engine feeds a long prompt."""
        for start in range(0, len(self.tokens), self.chunk):
            self._step(self.tokens[start : start + self.chunk])
        self.kv.commit(0, self.tokens)

    def decode(self) -> None:
        self.tokens.append(self.next_token)
        self._step([self.next_token])
        self.kv.commit(0, self.tokens)


class MlcxEngine:
    name = "mlcx"
    command = None
    notes: tuple[str, ...] = ()

    def __init__(self, artifact_dir: Path, workload: Workload):
        self.artifact = Artifact(artifact_dir)
        self.blocks = kv_blocks(self.artifact, workload)
        self.runner = create_runner(self.artifact, self.blocks, num_state_slots=1)
        self.device = DEVICE_NAMES[self.artifact.config.runtime](self.runner, self.artifact)
        self.vocab = self.artifact.config.model.vocab_size

    def close(self) -> None:
        """Frees the runner and its weights (the artifact's config stays)."""
        del self.runner
        gc.collect()

    def warm_up(self, ids: list[int], workload: Workload) -> None:
        """Pages in the weights, spins up thread pools, lets drivers compile pipelines."""
        self.run(ids, workload)

    def run(self, ids: list[int], workload: Workload) -> RunTiming:
        sequence = GreedySequence(self.runner, self.artifact, self.blocks, ids)
        start = time.perf_counter()
        sequence.prefill()
        prefilled = time.perf_counter()
        for _ in range(workload.decode_tokens):
            sequence.decode()
        return RunTiming(prefilled - start, time.perf_counter() - prefilled)
