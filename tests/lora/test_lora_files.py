"""The other ways in: llama.cpp's GGUF adapter (convert_lora_to_gguf.py of a PEFT folder) runs
exactly as the folder does, and `mlcx compile --lora DIR` merges an adapter into the weights
(MLC-LLM's way) with the model's usual step functions."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.lora.read import read_adapter
from mlcx.frontends.source import load_source
from mlcx.runtime.lora.slots import LoraSlots
from tests.support.cli import run_mlcx
from tests.support.harness import Harness, hf_logits
from tests.support.lora_models import AdapterSpec, convert_to_gguf, make_adapter, peft_model
from tests.support.tiny_models import TinySpec

PROMPT = [5, 17, 42, 9, 100, 3, 77]


@pytest.fixture(scope="module")
def gguf_adapter(lora_base, adapters, tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf-lora") / "a1.gguf"
    return convert_to_gguf(lora_base, adapters["a1"], out)


def _logits(artifact, adapter_pairs, slot: int) -> np.ndarray:
    h = Harness(artifact)
    LoraSlots.load(Artifact(artifact), adapter_pairs, h.runner)
    return h.step({0: PROMPT}, all_rows=True, lora={0: (slot, 1.0)})[0]


def test_the_gguf_adapter_equals_the_peft_folder(lora_artifact, adapters, gguf_adapter):
    from_gguf = _logits(lora_artifact, [("g", str(gguf_adapter))], 1)
    from_folder = _logits(lora_artifact, [("p", str(adapters["a1"]))], 1)
    np.testing.assert_allclose(from_gguf, from_folder, atol=1e-6)
    assert np.abs(from_folder - _logits(lora_artifact, [], 0)).max() > 1e-2


def test_the_gguf_pairs_are_the_folders_with_llamas_rows_put_back(
    lora_base, adapters, gguf_adapter
):
    source = load_source(str(lora_base))
    assert source.arch.gguf is not None and source.arch.gguf.names.rope_permuted
    folder = read_adapter(adapters["a1"], source.arch, source.config)
    gguf = read_adapter(gguf_adapter, source.arch, source.config)
    assert gguf.pairs.keys() == folder.pairs.keys()
    for key, pair in folder.pairs.items():
        np.testing.assert_allclose(gguf.pairs[key].delta(), pair.delta(), atol=1e-6)


def test_compile_lora_merges_the_adapter(lora_base, adapters, tmp_path):
    out = tmp_path / "merged"
    result = run_mlcx(
        "compile", str(lora_base), "-o", str(out), "-q", "q0f32", "--kv-dtype", "float32",
        "--lora", str(adapters["a2"]),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    config = Artifact(out).config
    assert config.lora is None and config.lora_merged == str(adapters["a2"].resolve())
    want = hf_logits(peft_model(lora_base, adapters["a2"]), PROMPT)
    got = Harness(out).step({0: PROMPT}, all_rows=True)[0]
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_bad_adapters_say_what_is_wrong(lora_base, adapters, tmp_path, tiny_model):
    source = load_source(str(lora_base))
    with pytest.raises(ModelSourceError, match="not a LoRA adapter mlcx reads"):
        read_adapter(lora_base, source.arch, source.config)  # a model folder
    other = load_source(str(tiny_model(TinySpec(hidden=32, heads=2, kv_heads=1))))
    with pytest.raises(ModelSourceError, match="the adapter is for another model"):
        read_adapter(adapters["a1"], other.arch, other.config)
    dora = tmp_path / "dora"
    dora.mkdir()
    config = (adapters["a1"] / "adapter_config.json").read_text()
    (dora / "adapter_config.json").write_text(
        config.replace('"use_dora": false', '"use_dora": true')
    )
    with pytest.raises(UnsupportedModelError, match="DoRA"):
        read_adapter(dora, source.arch, source.config)


def test_an_artifact_without_slots_refuses_adapters(compiled, adapters):
    plain = compiled(TinySpec(seed=3))
    with pytest.raises(ValueError, match="--lora-slots"):
        LoraSlots.load(Artifact(plain), [("a1", str(adapters["a1"]))], runner=None)


def test_more_adapters_than_slots_or_a_higher_rank(lora_base, lora_artifact, adapters, tmp_path):
    three = [("a", str(adapters["a1"])), ("b", str(adapters["a2"])), ("c", str(adapters["a1"]))]
    with pytest.raises(ValueError, match="--lora-slots 3"):
        LoraSlots.load(Artifact(lora_artifact), three, runner=None)
    wide = make_adapter(lora_base, tmp_path / "r16", AdapterSpec(5, rank=16))
    with pytest.raises(ValueError, match="rank 16.*--lora-rank 16"):
        LoraSlots.load(Artifact(lora_artifact), [("w", str(wide))], runner=None)
