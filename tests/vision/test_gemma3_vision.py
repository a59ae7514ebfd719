"""Gemma 3 with images against transformers on a tiny random Gemma3ForConditionalGeneration
(32x32 SigLIP, 8x8 patches, 2 layers; 4 image tokens; a local and a global text layer):
the image rows of `embed_image`, every logit row of an image+text prompt (image tokens see
their whole image, as transformers' token_type_ids mask says) and 32 greedy tokens, to 1e-4;
with the encoder's linears opted into int16 codes, the logits to 2e-3 and the same tokens.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.scheduler_output import Scheduled, SchedulerOutput
from mlcx.runtime.core.sequence import Sequence
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.sample.params import SamplingParams

TOL = 1e-4


@pytest.fixture(scope="module")
def llm(vision_artifact):
    return LLM(str(vision_artifact), EngineConfig(kv_blocks=64))


def _messages(image, question="what is this?"):
    parts = [{"type": "text", "text": question}, {"type": "image", "image": image}]
    return [{"role": "user", "content": [*parts, {"type": "text", "text": " answer"}]}]


def _hf_pixels(folder, image):
    from transformers import Gemma3ImageProcessor

    return Gemma3ImageProcessor.from_pretrained(folder)(images=[image], return_tensors="pt")[
        "pixel_values"
    ]


def _hf_inputs(llm, folder, ids, image):
    image_id = llm.engine.images.config.image_token_id
    types = torch.tensor([[int(t == image_id) for t in ids]])
    return torch.tensor([ids]), _hf_pixels(folder, image), types


def _prompt_logits(llm, ids, images) -> np.ndarray:
    """Every row's logits of one prefill step of the prompt, as the engine builds it."""
    engine = llm.engine
    kv = KVCacheManager(32, engine.artifact.config.page_size, False)
    kv.add_sequence(0, ids)
    copies = kv.append(0, len(ids))
    encoded = engine.images.encode(ids, images)
    plan = SchedulerOutput([Scheduled(Sequence(0, "r", 0, list(ids), len(ids)), tuple(ids))])
    step = engine.images.step(plan, lambda seq: encoded)
    tables = kv.build_arrays([(0, len(ids))], spans=step.spans)
    rows = np.arange(len(ids), dtype=np.int32)
    batch = ForwardBatch(np.array(ids, np.int32), tables, copies, rows, step.rows, step.embeds)
    return engine.runner.forward(batch)


def test_image_rows_match_transformers(llm, vision_folder, vision_reference, photo):
    rows = llm.engine.images.encoder.encode(photo).rows
    with torch.no_grad():
        pixels = _hf_pixels(vision_folder, photo)
        want = vision_reference.model.get_image_features(pixels).pooler_output[0].numpy()
    assert rows.shape == (4, 64)
    assert np.abs(rows - want).max() <= TOL


def test_image_prompt_logits_match_transformers(llm, vision_folder, vision_reference, photo):
    ids, images = llm.chat_inputs(_messages(photo))
    got = _prompt_logits(llm, ids, images)
    tokens, pixels, types = _hf_inputs(llm, vision_folder, ids, photo)
    with torch.no_grad():
        want = vision_reference(tokens, pixel_values=pixels, token_type_ids=types).logits[0]
        causal = vision_reference(tokens, pixel_values=pixels).logits[0]
    assert np.abs(got - want.numpy()).max() <= TOL
    # the image tokens' bidirectional mask matters here: a causal-only prefill is far off
    assert np.abs(got - causal.numpy()).max() > 1e-2


def test_greedy_tokens_match_transformers(llm, vision_folder, vision_reference, photo):
    completion = _greedy_matches(llm, vision_folder, vision_reference, photo)
    assert len(set(completion)) > 4  # not a degenerate repeat


def _greedy_matches(llm, folder, reference, photo) -> list[int]:
    """32 greedy tokens after the photo's prompt, asserted equal to transformers'."""
    ids, images = llm.chat_inputs(_messages(photo))
    tokens, pixels, types = _hf_inputs(llm, folder, ids, photo)
    with torch.no_grad():
        out = reference.generate(
            tokens,
            pixel_values=pixels,
            token_type_ids=types,
            max_new_tokens=32,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == out[0, len(ids) :].tolist()
    return completion.token_ids


INT16_TOL = 2e-3  # 12-bit codes per row: measured 4.3e-4 (rows), 7.0e-4 (logits)


@pytest.fixture(scope="module")
def int16_llm(vision_folder, tmp_path_factory):
    """The same model, its encoder's linears opted into int16 codes (BuildOptions)."""
    from mlcx.compile.model import CompileRequest
    from mlcx.targets.base import BuildOptions
    from tests.support.compile_cache import compile_model

    out = tmp_path_factory.mktemp("gemma3_vision_int16") / "art"
    options = BuildOptions(encoder_linears="int16")
    request = CompileRequest(
        str(vision_folder), "cpu", "q0f32", out, options=options, kv_dtype="float32"
    )
    return LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))


def test_int16_encoder_linears_stay_near_transformers(
    int16_llm, vision_folder, vision_reference, photo
):
    ids, images = int16_llm.chat_inputs(_messages(photo))
    got = _prompt_logits(int16_llm, ids, images)
    tokens, pixels, types = _hf_inputs(int16_llm, vision_folder, ids, photo)
    with torch.no_grad():
        want = vision_reference(tokens, pixel_values=pixels, token_type_ids=types).logits[0]
    assert np.abs(got - want.numpy()).max() <= INT16_TOL
    _greedy_matches(int16_llm, vision_folder, vision_reference, photo)
