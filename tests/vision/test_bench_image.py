"""`mlcx bench image`: the encoder's preprocessing and encoding times on fresh images."""

from __future__ import annotations

import os

import pytest

from mlcx.bench.image_encode import bench_image
from mlcx.errors import ArtifactError


def test_bench_image_times_the_encoder(vision_artifact):
    result = bench_image(vision_artifact, reps=2)
    assert result.tokens == 4 and result.device == "cpu"
    assert result.preprocess_s > 0 and result.encode_s > 0
    assert "4 tokens per image" in "\n".join(result.lines())


def test_a_text_only_artifact_has_nothing_to_time(compiled):
    with pytest.raises(ArtifactError, match="no image encoder"):
        bench_image(compiled())


def test_the_encoder_alone_sizes_tvms_threads_as_compiled(vision_artifact, monkeypatch):
    """Opened without the text model (as `mlcx bench image` does), the encoder still runs on
    the cores it was compiled for: TVM's own default is half the logical CPUs."""
    from mlcx.artifact.config import ArtifactConfig, read_config
    from mlcx.artifact.encoder import read_encoder
    from mlcx.runtime.backends.encoder_runner import open_encoder_runner

    monkeypatch.delenv("TVM_NUM_THREADS", raising=False)
    open_encoder_runner(vision_artifact, read_encoder(vision_artifact))
    cores = read_config(vision_artifact, ArtifactConfig).tvm_target["num-cores"]
    assert os.environ["TVM_NUM_THREADS"] == str(cores)
