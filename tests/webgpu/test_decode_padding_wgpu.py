"""The CUDA runner's decode padding (a batch padded to its bucket over a scratch page,
mlcx.runtime.backends.decode_graph) gives the same logits as the unpadded batch, on the GPU
kernels every GPU target shares: WebGPU on lavapipe runs them here, CUDA cannot."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.kernels.decode_buckets import DECODE_BUCKETS, bucket_for, page_capacity
from mlcx.runtime.backends.decode_graph import padded_decode_inputs
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.registry import create_runner
from tests.support.harness import Harness


class _PaddingRunner:
    """Runs decode steps the way the CUDA runner does (padded to a bucket over a scratch
    page), on another runner: here the wgpu one, which runs the same GPU kernels."""

    def __init__(self, inner, context_window: int, scratch: int):
        self.inner, self.context, self.scratch = inner, context_window, scratch

    def forward(self, batch: ForwardBatch) -> np.ndarray:
        if batch.function != "decode":
            return self.inner.forward(batch)
        rows = batch.tables.batch_size
        bucket = bucket_for(rows, DECODE_BUCKETS[-1])
        page = batch.tables.page_size
        arrays = padded_decode_inputs(
            batch, bucket, page_capacity(bucket, self.context, page), self.scratch
        )
        tables = type(batch.tables)(**{k: arrays[k] for k in list(arrays)[1:]}, page_size=page)
        padded = ForwardBatch(arrays["input_ids"], tables, batch.copies)
        return self.inner.forward(padded)[:rows]


@pytest.mark.parametrize("quantization", ["q4f32"])
def test_padded_decode_gives_the_same_logits_on_the_gpu_kernels(
    adapter, webgpu_artifact, quantization
):
    artifact = webgpu_artifact(quantization)
    blocks = 24
    plain = Harness(artifact, num_blocks=blocks)
    runner = create_runner(Artifact(artifact), blocks + 1)  # the last page is the scratch page
    config = Artifact(artifact).config
    padded = Harness(
        artifact, num_blocks=blocks, runner=_PaddingRunner(runner, config.context_window, blocks)
    )
    rng = np.random.default_rng(0)
    prompts = {seq: rng.integers(3, 300, n).tolist() for seq, n in ((1, 7), (2, 19), (3, 3))}
    for h in (plain, padded):
        h.step(prompts)
    for _ in range(3):
        feed = {seq: int(rng.integers(3, 300)) for seq in prompts}
        want, got = plain.decode(feed), padded.decode(feed)
        for seq in prompts:
            np.testing.assert_allclose(got[seq], want[seq], atol=1e-4, rtol=0)
