"""How the engine schedules images: a chunk never cuts an image, image tokens become rows that
see their whole image, the prefix cache keys image tokens by the image's content hash (the
same image next turn is neither encoded nor prefilled again; another image is not reused)."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.images import PromptImage, cache_ids, chunk_tokens
from mlcx.runtime.kv.page_tables import SequenceStep, build_page_table_arrays, span_steps
from mlcx.runtime.sample.params import SamplingParams
from tests.vision.conftest import random_image

GREEDY = SamplingParams.greedy(max_tokens=8, ignore_eos=True)


def _image(start: int, n: int = 4, digest: bytes = b"a" * 32) -> PromptImage:
    return PromptImage(start, np.zeros((n, 2), np.float32), digest)


def test_a_chunk_stops_before_an_image_it_cannot_hold():
    images = [_image(10)]
    assert chunk_tokens(images, 0, 12) == 10  # would cut 10..14
    assert chunk_tokens(images, 10, 12) == 12
    assert chunk_tokens(images, 0, 14) == 14
    assert chunk_tokens(images, 10, 3) == 0  # starts at the image and cannot hold it


def test_image_tokens_are_cached_by_content():
    ids = [7, 8, 5, 5, 5, 5, 9]
    a, b = _image(2, digest=b"a" * 32), _image(2, digest=b"b" * 32)
    assert cache_ids(ids, [a])[:2] == [7, 8] and cache_ids(ids, [a])[6] == 9
    assert cache_ids(ids, [a]) != cache_ids(ids, [b])
    assert min(cache_ids(ids, [a])[2:6]) < 0  # never a real token id


def test_image_rows_see_their_whole_image():
    step = SequenceStep([0, 1], num_tokens=20, num_new=20)
    rows = span_steps(step, [(10, 14)], page_size=16)
    tables = build_page_table_arrays(rows, 16)
    assert tables.positions.tolist() == list(range(20))
    assert tables.kv_lens.tolist() == [10, 14, 14, 14, 14, 20]
    assert tables.q_indptr.tolist() == [0, 10, 11, 12, 13, 14, 20]


@pytest.fixture(scope="module")
def conversation(photo):
    first = [{"type": "text", "text": "what is this?"}, {"type": "image", "image": photo}]
    return [{"role": "user", "content": first}]


def _reply(llm, messages):
    ids, images = llm.chat_inputs(messages)
    [completion] = llm.generate([ids], GREEDY, images=[images])[0].outputs
    return ids, completion


def test_same_image_next_turn_is_not_encoded_or_prefilled_again(vision_artifact, conversation):
    llm = LLM(str(vision_artifact), EngineConfig(kv_blocks=64))
    fresh = LLM(str(vision_artifact), EngineConfig(kv_blocks=64, enable_prefix_caching=False))
    ids, first = _reply(llm, conversation)
    turn = [
        *conversation,
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "and then?"},
    ]
    before = llm.engine.stats().prefix_hit_tokens
    ids2, second = _reply(llm, turn)
    image_end = max(i for i, t in enumerate(ids) if t == llm.engine.images.config.image_token_id)
    assert llm.engine.images.encoder.encoded == 1
    assert llm.engine.stats().prefix_hit_tokens - before > image_end
    assert second.token_ids == _reply(fresh, turn)[1].token_ids


def test_another_image_reuses_nothing_past_the_text_before_it(vision_artifact, conversation):
    llm = LLM(str(vision_artifact), EngineConfig(kv_blocks=64))
    ids, _ = _reply(llm, conversation)
    other = [
        {
            **conversation[0],
            "content": [conversation[0]["content"][0], {"type": "image", "image": random_image(9)}],
        }
    ]
    before = llm.engine.stats().prefix_hit_tokens
    _reply(llm, other)
    image_start = ids.index(llm.engine.images.config.image_token_id)
    assert llm.engine.stats().prefix_hit_tokens - before <= image_start
    assert llm.engine.images.encoder.encoded == 2


def test_chunked_prefill_never_cuts_an_image(vision_artifact, conversation):
    whole = LLM(str(vision_artifact), EngineConfig(kv_blocks=64))
    # 12-token steps: the first would end inside the image (positions 10..13)
    chunked = LLM(str(vision_artifact), EngineConfig(kv_blocks=64, prefill_chunk=12, max_batch=4))
    ids, want = _reply(whole, conversation)
    start = ids.index(whole.engine.images.config.image_token_id)
    assert start < 12 < start + 4
    assert _reply(chunked, conversation)[1].token_ids == want.token_ids


def test_a_batch_of_prompts_with_different_images(vision_artifact, conversation):
    """Rows of each item's images land on its own tokens when prompts share a step."""
    llm = LLM(str(vision_artifact), EngineConfig(kv_blocks=64, enable_prefix_caching=False))
    first = conversation[0]["content"]
    prompts = [
        llm.chat_inputs([{"role": "user", "content": [first[0], {"type": "image", "image": im}]}])
        for im in (random_image(11), random_image(12), random_image(13))
    ]
    ids, images = [p[0] for p in prompts], [p[1] for p in prompts]
    together = [o.outputs[0].token_ids for o in llm.generate(ids, GREEDY, images=images)]
    alone = [llm.generate([i], GREEDY, images=[im])[0].outputs[0].token_ids for i, im in prompts]
    assert together == alone
    assert len({tuple(t) for t in alone}) > 1  # the images make the answers differ
