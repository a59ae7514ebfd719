"""Gemma 4's text model read from a multimodal folder (Gemma4ForConditionalGeneration, as Google
publishes it): the tiny Gemma 4 with every switch on (tests/support/tiny_gemma4.py) inside a
multimodal model with a tiny vision tower. transformers gives the same text logits from both
folders, and mlcx reads the same config and the same weights from both (the text folder's
artifact is held to transformers in tests/models/test_gemma4.py), without compiling again."""

from __future__ import annotations

import json

import numpy as np

from tests.support.gguf_vs_hf import converted_weights
from tests.support.tiny_models import load_reference

VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
VISION |= {"num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 16}


def _multimodal(text_folder, folder):
    import torch
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration

    text = json.loads((text_folder / "config.json").read_text())
    config = Gemma4Config(text_config=text, vision_config=VISION, audio_config=None)
    model = Gemma4ForConditionalGeneration(config).to(torch.float32).eval()
    model.model.language_model.load_state_dict(load_reference(text_folder).model.state_dict())
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((text_folder / name).read_bytes())
    return model


def test_the_multimodal_folder_reads_as_its_text_model(gemma4_model, tmp_path):
    import torch

    text_folder, folder = gemma4_model("everything"), tmp_path / "multimodal"
    multimodal = _multimodal(text_folder, folder)
    ids = torch.tensor([np.random.default_rng(3).integers(0, 380, 24).tolist()])
    with torch.no_grad():
        want = load_reference(text_folder)(ids).logits
        torch.testing.assert_close(multimodal(input_ids=ids).logits, want, rtol=0, atol=1e-5)
    config, weights = converted_weights(folder)
    text_config, text_weights = converted_weights(text_folder)
    assert config == text_config
    assert weights.keys() == text_weights.keys()
    for name, array in weights.items():
        np.testing.assert_array_equal(array, text_weights[name], err_msg=name)
