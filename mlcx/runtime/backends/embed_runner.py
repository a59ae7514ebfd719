"""Runs an embedding artifact's `embed` function with TVM's Relax VM (no KV cache)."""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from mlcx.artifact.embedding_config import EmbeddingArtifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.embed_batch import EmbedBatch
from mlcx.runtime.backends.tvm_vm import DEVICES, use_compiled_threads

EMBED = "embed"  # the exported function (mlcx.frontends.nn.embedding_model.EMBED)


class EmbedRunner:
    def __init__(self, artifact: EmbeddingArtifact):
        config = artifact.config
        use_compiled_threads(config.tvm_target)
        if config.target not in DEVICES:
            raise ArtifactError(f"target {config.target!r} does not run on TVM's Relax VM here")
        self.device = DEVICES[config.target](0)
        try:
            module = tvm.runtime.load_module(str(artifact.library_path))
        except Exception as err:
            raise ArtifactError(f"cannot load {artifact.library_path} ({err}); recompile") from None
        self.vm = relax.VirtualMachine(module, self.device)
        params = [
            tvm.runtime.tensor(np.asarray(a), self.device)
            for _, a in load_arrays(artifact.params_dir)
        ]
        self._params = tvm_ffi.convert(params)

    def run(self, batch: EmbedBatch) -> np.ndarray:
        """Pooled vectors [batch, hidden] float32 (not normalized)."""
        args = [tvm.runtime.tensor(np.ascontiguousarray(a), self.device) for a in batch.arrays()]
        return self.vm[EMBED](*args, self._params).numpy()
