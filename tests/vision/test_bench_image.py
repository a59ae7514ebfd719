"""`mlcx bench image`: the encoder's preprocessing and encoding times on fresh images."""

from __future__ import annotations

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
