"""Checkpoint layouts real models ship in: sharded safetensors with an index, bfloat16."""

from __future__ import annotations

import shutil

import numpy as np
import torch

from mlcx.compile.model import CompileRequest
from mlcx.frontends.source import load_source
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, hf_logits
from tests.support.reference_pages import reference_pages
from tests.support.tiny_models import TinySpec, load_reference


def test_sharded_bfloat16_checkpoint(tiny_model, tmp_path):
    source = tiny_model(TinySpec(seed=6))
    folder = tmp_path / "sharded"
    model = load_reference(source).to(torch.bfloat16)
    model.save_pretrained(folder, max_shard_size="40KB")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, folder / name)
    shards = sorted(folder.glob("*.safetensors"))
    assert len(shards) > 2 and (folder / "model.safetensors.index.json").exists()
    assert load_source(str(folder)).tensors.get("lm_head.weight").load().dtype.name == "bfloat16"

    artifact = compile_model(
        CompileRequest(
            model=str(folder), quantization="q0f32", output=tmp_path / "art", **reference_pages()
        )
    )
    reference = load_reference(folder)  # bfloat16 weights upcast to float32, exactly
    prompt = np.random.default_rng(3).integers(0, reference.config.vocab_size, 19).tolist()
    got = Harness(artifact, num_blocks=16).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= 1e-4
