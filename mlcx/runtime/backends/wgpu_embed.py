"""Runs an embedding artifact compiled for webgpu (its `embed` plan) through wgpu-native: the
weights stay on the GPU, each batch's padded arrays go up and only the pooled vectors come back.
The browser runs the same plan (web/src/embedding_runner.js)."""

from __future__ import annotations

import numpy as np

from mlcx.artifact.embedding_config import EmbeddingArtifact
from mlcx.frontends.nn.embedding_model import EMBED, EMBED_INPUTS
from mlcx.runtime.backends.embed_batch import EmbedBatch
from mlcx.runtime.backends.wgpu_module import WgpuModule, load_plan


class WgpuEmbedRunner:
    def __init__(self, artifact: EmbeddingArtifact, device: str | None = None):
        plan = load_plan(artifact.library_path, EMBED, EMBED_INPUTS)
        self.module = WgpuModule(plan, EMBED, artifact.path, artifact.params_dir, device)

    def run(self, batch: EmbedBatch) -> np.ndarray:
        """Pooled vectors [batch, hidden] float32 (not normalized), as EmbedRunner.run."""
        return self.module(dict(zip(EMBED_INPUTS, batch.arrays(), strict=True)))
