"""A model with adapter slots runs each adapter as transformers + peft do: the logits of a
prompt and of the decode steps after it, per adapter, at the adapter's own scale and at
another, within 1e-4 of the reference; slot 0 is the base model."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.runtime.lora.slots import LoraSlots
from tests.support.harness import Harness, hf_logits
from tests.support.lora_models import peft_model
from tests.support.tiny_models import load_reference

PROMPT = [5, 17, 42, 9, 100, 3, 77, 250, 31]
DECODED = [12, 200, 7]
ATOL = 1e-4


@pytest.fixture(scope="module")
def harness(lora_artifact, adapters):
    h = Harness(lora_artifact)
    slots = LoraSlots.load(Artifact(lora_artifact), list(adapters.items()), h.runner)
    assert slots.names == ("a1", "a2")
    return h


def _run(harness: Harness, seq: int, slot: int, scale: float) -> np.ndarray:
    """All logits of PROMPT (one prefill) then of each DECODED token (decode steps)."""
    lora = {seq: (slot, scale)}
    rows = [harness.step({seq: PROMPT}, all_rows=True, lora=lora)[seq]]
    for token in DECODED:
        rows.append(harness.decode({seq: token}, lora=lora)[seq][None])
    return np.concatenate(rows)


def _scaled(model, factor: float):
    """The peft model with every adapter scale multiplied by `factor` (a request's scale)."""
    for module in model.modules():
        scaling = getattr(module, "scaling", None)
        if isinstance(scaling, dict):
            for name in scaling:
                scaling[name] *= factor
    return model


@pytest.mark.parametrize(("slot", "name"), [(1, "a1"), (2, "a2")])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_each_adapter_matches_peft(harness, lora_base, adapters, slot, name, scale):
    reference = _scaled(peft_model(lora_base, adapters[name]), scale)
    want = hf_logits(reference, PROMPT + DECODED)
    got = _run(harness, 10 * slot + int(scale * 4), slot, scale)
    np.testing.assert_allclose(got, want, atol=ATOL)
    base = hf_logits(load_reference(lora_base), PROMPT + DECODED)
    assert np.abs(want - base).max() > 100 * ATOL  # the adapter changes the logits


def test_slot_zero_is_the_base_model(harness, lora_base):
    want = hf_logits(load_reference(lora_base), PROMPT + DECODED)
    np.testing.assert_allclose(_run(harness, 99, 0, 1.0), want, atol=ATOL)


def test_scale_zero_is_the_base_model(harness, lora_base):
    want = hf_logits(load_reference(lora_base), PROMPT + DECODED)
    np.testing.assert_allclose(_run(harness, 98, 1, 0.0), want, atol=ATOL)
