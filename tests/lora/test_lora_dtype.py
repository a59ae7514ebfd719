"""How adapters are stored: float16 on CPU unless the compile says otherwise (the PEFT logits
tests run on that default), recorded in the artifact so the runtime stacks them to match; an
artifact from before the dtype was recorded keeps its activations' dtype."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.frontends.lora.layout import lora_layout
from mlcx.kernels.lora_layout import LoraSpec
from mlcx.runtime.lora.slots import LoraSlots


class _Runner:
    def set_lora_weights(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays


def test_a_cpu_artifact_stores_adapters_as_float16(lora_artifact, adapters):
    config = Artifact(lora_artifact).config
    assert config.lora.dtype == "float16" and config.activation_dtype == "float32"
    runner = _Runner()
    LoraSlots.load(Artifact(lora_artifact), [("a1", str(adapters["a1"]))], runner)
    assert {a.dtype for a in runner.arrays} == {np.dtype("float16")}
    assert any(np.abs(a[1]).max() > 0 for a in runner.arrays)  # slot 1 holds the adapter


def test_an_artifact_without_a_recorded_dtype_stacks_its_activations_dtype(lora_artifact):
    config = Artifact(lora_artifact).config
    spec = LoraSpec.from_dict({k: v for k, v in config.lora.to_dict().items() if k != "dtype"})
    assert spec.dtype is None
    assert lora_layout(config.model, spec, "float32").weight_dtype == "float32"
    assert LoraSpec.from_dict(config.lora.to_dict()) == config.lora


def test_an_unknown_dtype_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="float16 or float32, not 'int8'"):
        LoraSpec(2, 8, dtype="int8")
