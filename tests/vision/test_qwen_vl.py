"""Qwen2.5-VL and Qwen3-VL with images against transformers, on tiny random folders it wrote
(tests/support/tiny_qwen_vl.py): two image sizes, so that the dynamic resolution shows (6 and
12 or 15 image tokens, Qwen2.5-VL's windows cut by the image's edge); the image rows (Qwen3-VL's
with its deepstack blocks), the M-RoPE positions against get_rope_index, every logit row of an
image prompt and 32 greedy tokens, to 1e-4. Image tokens attend causally, as in transformers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlcx.compile.model import CompileRequest, compile_model
from mlcx.errors import ModelSourceError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.rope_positions import token_positions
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.sample.params import SamplingParams
from tests.support.compile_cache import compile_model as cached_compile
from tests.support.tiny_qwen_vl import hf_image_inputs, load_reference, make_tiny_qwen_vl
from tests.vision.conftest import random_image

TOL = 1e-4
SIZES = {"small": (60, 40), "large": (150, 100)}


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def kind(request):
    return request.param


@pytest.fixture(scope="module")
def folder(kind, tmp_path_factory):
    return make_tiny_qwen_vl(tmp_path_factory.mktemp(kind) / "hf", kind)


@pytest.fixture(scope="module")
def artifact(folder, kind, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"{kind}-art") / "art"
    request = CompileRequest(str(folder), quantization="q0f32", output=out, kv_dtype="float32")
    return cached_compile(request)


@pytest.fixture(scope="module")
def llm(artifact):
    return LLM(str(artifact), EngineConfig(kv_blocks=64))


@pytest.fixture(scope="module")
def reference(folder, kind):
    return load_reference(folder, kind)


def _messages(*images):
    parts = [{"type": "image", "image": image} for image in images]
    content = [{"type": "text", "text": "what is this?"}, *parts, {"type": "text", "text": " ok"}]
    return [{"role": "user", "content": content}]


def _hf(llm, folder, ids, images):
    tokens = torch.tensor([ids])
    types = (tokens == llm.engine.images.config.image_token_id).int()
    pixels = [hf_image_inputs(folder, image) for image in images]
    return dict(
        input_ids=tokens,
        pixel_values=torch.cat([p["pixel_values"] for p in pixels]),
        image_grid_thw=torch.cat([p["image_grid_thw"] for p in pixels]),
        mm_token_type_ids=types,
    )


def _hf_rows(reference, inputs) -> np.ndarray:
    with torch.no_grad():
        out = reference.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"])
    blocks = [out.pooler_output[0], *(d[0] for d in getattr(out, "deepstack_features", None) or ())]
    return torch.cat(blocks, dim=1).numpy()


@pytest.mark.parametrize("size", SIZES)
def test_image_rows_match_transformers(llm, folder, reference, size):
    image = random_image(3, SIZES[size])
    rows = llm.engine.images.encoder.encode(image).rows
    want = _hf_rows(reference, hf_image_inputs(folder, image))
    assert rows.shape == want.shape
    assert np.abs(rows - want).max() <= TOL


def test_positions_match_get_rope_index(llm, folder, reference):
    images = [random_image(4, SIZES["large"]), random_image(5, SIZES["small"])]
    ids, got_images = llm.chat_inputs(_messages(*images))
    encoded = llm.engine.images.encode(ids, got_images)
    inputs = _hf(llm, folder, ids, images)
    want, _ = reference.model.get_rope_index(
        inputs["input_ids"], inputs["mm_token_type_ids"], inputs["image_grid_thw"]
    )
    got = token_positions(0, len(ids), encoded)
    assert np.array_equal(got, want[:, 0].numpy())
    # any chunk of the prompt (a prefill split over steps) has the same positions
    assert np.array_equal(token_positions(7, 20, encoded), got[:, 7:27])


def _prompt_logits(llm, ids, images, flat: bool = False) -> np.ndarray:
    """Every row's logits of one prefill step of the prompt, as the engine builds it; `flat`:
    with 1-D positions (what a model without M-RoPE would use)."""
    engine = llm.engine
    kv = KVCacheManager(32, engine.artifact.config.page_size, False)
    kv.add_sequence(0, ids)
    copies = kv.append(0, len(ids))
    encoded = engine.images.encode(ids, images)
    tables = kv.build_arrays([(0, len(ids))])
    index = np.full(len(ids), -1, np.int32)
    for image in encoded:
        index[image.start : image.end] = np.arange(image.start, image.end) - image.start
    offsets = np.cumsum([0] + [len(im.rows) for im in encoded[:-1]])
    for image, offset in zip(encoded, offsets, strict=True):
        index[image.start : image.end] += offset
    embeds = np.concatenate([im.rows for im in encoded]).astype(np.float32)
    positions = np.tile(tables.positions, (3, 1)) if flat else token_positions(0, len(ids), encoded)
    rows = np.arange(len(ids), dtype=np.int32)
    batch = ForwardBatch(
        np.array(ids, np.int32), tables, copies, rows, index, embeds, rope_positions=positions
    )
    return engine.runner.forward(batch)


@pytest.mark.parametrize("size", SIZES)
def test_image_prompt_logits_match_transformers(llm, folder, reference, size):
    prompt_logits_match_transformers(llm, folder, reference, random_image(6, SIZES[size]))


def prompt_logits_match_transformers(llm, folder, reference, image) -> None:
    """Every logit row of an image prompt within TOL of transformers'; the same prompt at 1-D
    positions much further off (the 3-row positions reach the kernels)."""
    ids, images = llm.chat_inputs(_messages(image))
    got = _prompt_logits(llm, ids, images)
    with torch.no_grad():
        want = reference(**_hf(llm, folder, ids, [image])).logits[0].numpy()
    error = np.abs(got - want).max()
    assert error <= TOL
    flat = np.abs(_prompt_logits(llm, ids, images, flat=True) - want).max()
    assert flat > max(20 * error, TOL)


@pytest.mark.parametrize("size", SIZES)
def test_greedy_tokens_match_transformers(llm, folder, reference, size):
    greedy_matches_transformers(llm, folder, reference, random_image(7, SIZES[size]))


def greedy_matches_transformers(llm, folder, reference, image, distinct: int = 5) -> None:
    """32 greedy tokens of `llm` after an image prompt are transformers' (at least `distinct`
    different ones: not a degenerate repeat)."""
    ids, images = llm.chat_inputs(_messages(image))
    with torch.no_grad():
        out = reference.generate(
            **_hf(llm, folder, ids, [image]),
            max_new_tokens=32,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == out[0, len(ids) :].tolist()
    assert len(set(completion.token_ids)) >= distinct


def test_untested_targets_are_refused(folder, kind, tmp_path):
    request = CompileRequest(str(folder), target="cuda", output=tmp_path / "out")
    with pytest.raises(
        ModelSourceError, match=f"{kind} compiles for cpu, webgpu, vulkan only so far"
    ):
        compile_model(request)
    assert not (tmp_path / "out").exists()
