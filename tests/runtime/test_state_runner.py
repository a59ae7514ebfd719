"""A runner refuses an artifact that lists state tensors without the functions they need."""

from __future__ import annotations

import json
import shutil

import pytest

from mlcx.artifact.config import CONFIG_FILE, Artifact
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.registry import create_runner


def test_state_tensors_without_copy_states_are_refused(compiled, tmp_path):
    copy = tmp_path / "artifact"
    shutil.copytree(compiled(), copy)
    config = json.loads((copy / CONFIG_FILE).read_text())
    config["state_tensors"] = [{"layer": 0, "name": "conv", "shape": [8, 3], "dtype": "float32"}]
    (copy / CONFIG_FILE).write_text(json.dumps(config))
    artifact = Artifact(copy)
    assert artifact.config.kv_layers == artifact.config.model.num_layers - 1
    with pytest.raises(ArtifactError, match="has state tensors but no copy_states; recompile"):
        create_runner(artifact, 8, num_state_slots=4)
