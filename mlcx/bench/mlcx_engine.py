"""Times an mlcx artifact: its compiled prefill and decode functions through the TVM runner.

The loop mirrors what the engine does per step (page tables from the KV cache manager, one
forward, greedy argmax) without the sampler and detokenizer, as the llama.cpp peer is driven
through its low-level eval too.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.bench.workload import RunTiming, Workload
from mlcx.runtime.backends.tvm_vm import TVMRunner
from mlcx.runtime.forward_batch import ForwardBatch
from mlcx.runtime.kv import KVCacheManager


def weight_bytes_per_token(artifact: Artifact) -> int:
    """Bytes of weights one decode step reads: every matrix (and the head); an untied
    embedding table is only looked up, one row per token."""
    tied = artifact.config.model.tie_word_embeddings
    total = 0
    for name, array in load_arrays(artifact.params_dir):
        if tied or not name.startswith("embed."):
            total += np.asarray(array).nbytes
    return total


def peak_memory_bytes() -> int:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class MlcxEngine:
    name = "mlcx"

    def __init__(self, artifact_dir: Path, workload: Workload):
        self.artifact = Artifact(artifact_dir)
        page = self.artifact.config.page_size
        self.blocks = (workload.prompt_tokens + workload.decode_tokens) // page + 2
        self.runner = TVMRunner(self.artifact, self.blocks, "cpu")
        self.vocab = self.artifact.config.model.vocab_size

    def run(self, ids: list[int], workload: Workload) -> RunTiming:
        kv = KVCacheManager(self.blocks, self.artifact.config.page_size, False)
        kv.add_sequence(0, ids)
        kv.append(0, len(ids))
        tokens = list(ids)
        start = time.perf_counter()
        logits = self.runner.forward(
            ForwardBatch(np.array(ids, np.int32), kv.build_arrays([(0, len(ids))]))
        )
        token = int(logits[-1].argmax())
        prefilled = time.perf_counter()
        kv.commit(0, tokens)
        for _ in range(workload.decode_tokens):
            kv.append(0, 1)
            tokens.append(token)
            batch = ForwardBatch(np.array([token], np.int32), kv.build_arrays([(0, 1)]))
            token = int(self.runner.forward(batch)[0].argmax())
            kv.commit(0, tokens)
        done = time.perf_counter()
        return RunTiming(prefilled - start, done - prefilled)
