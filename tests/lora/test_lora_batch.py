"""Sequences with different adapters share one batch: each row gets its own adapter's delta, so
16 requests alternating base / a1 / a2 give what each gives alone, logits and tokens. The
prefix cache keeps each adapter's (and scale's) blocks apart: a prompt cached by one adapter
is recomputed for another."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.lora.slots import LoraSlots
from mlcx.runtime.sample.params import SamplingParams
from tests.support.harness import Harness

PROMPTS = [[5, 17, 42, 9], [100, 3, 77], [250, 31, 12, 8, 90], [7, 7, 7, 200, 1, 60]]
ADAPTER_OF = [None, "a1", "a2"]  # request i runs with ADAPTER_OF[i % 3]
GREEDY = SamplingParams.greedy(max_tokens=12, ignore_eos=True)


def _harness(artifact, adapters) -> Harness:
    h = Harness(artifact)
    LoraSlots.load(Artifact(artifact), list(adapters.items()), h.runner)
    return h


def test_mixed_rows_equal_each_alone(lora_artifact, adapters):
    lora = {i: (i % 3, 1.0 if i % 3 != 2 else 0.7) for i in range(16)}
    feeds = {i: PROMPTS[i % 4] for i in range(16)}
    together = _harness(lora_artifact, adapters)
    prefill = together.step(feeds, all_rows=True, lora=lora)
    decode = together.decode({i: 11 + i for i in range(16)}, lora=lora)
    alone = _harness(lora_artifact, adapters)
    for i in range(16):
        want = alone.step({100 + i: feeds[i]}, all_rows=True, lora={100 + i: lora[i]})
        np.testing.assert_allclose(prefill[i], want[100 + i], atol=1e-5)
        step = alone.decode({100 + i: 11 + i}, lora={100 + i: lora[i]})
        np.testing.assert_allclose(decode[i], step[100 + i], atol=1e-5)
    assert not np.allclose(prefill[0], prefill[4], atol=1e-3)  # same prompt, other adapter


def test_sixteen_requests_alternating_adapters(lora_artifact, adapters):
    llm = LLM(lora_artifact, EngineConfig(max_batch=16), lora=adapters)
    loras = [ADAPTER_OF[i % 3] for i in range(16)]
    prompts = [PROMPTS[i % 4] for i in range(16)]
    batched = [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY, loras)]
    alone = LLM(lora_artifact, EngineConfig(max_batch=1), lora=adapters)
    for i in range(16):  # one at a time, after the others' prompts are in the prefix cache
        [out] = alone.generate([prompts[i]], GREEDY, loras[i])
        assert out.outputs[0].token_ids == batched[i], i
    assert batched[0] != batched[4] and batched[0] != batched[8]  # P0 base, a1, a2 differ
    assert llm.engine.kv.pool.num_used == 0


def test_the_prefix_cache_keys_blocks_by_adapter_and_scale(lora_artifact, adapters):
    prompt = list(range(20, 60))  # two full pages and a half
    fresh = {
        key: LLM(lora_artifact, lora=adapters).generate([prompt], GREEDY, lora)[0]
        for key, lora in (("base", None), ("a1", "a1"))
    }
    llm = LLM(lora_artifact, lora=adapters)
    for key, lora in (("base", None), ("a1", "a1"), ("base", None)):
        [out] = llm.generate([prompt], GREEDY, lora)
        assert out.outputs[0].token_ids == fresh[key].outputs[0].token_ids, key
    stats = llm.engine.stats()
    assert stats.prefix_hit_tokens == 32  # only the third run found blocks: the base model's


@pytest.mark.parametrize("bad", ["a3", "none"])
def test_an_adapter_not_loaded_is_refused(lora_artifact, adapters, bad):
    llm = LLM(lora_artifact, lora=adapters)
    with pytest.raises(ValueError, match=f"no LoRA adapter named '{bad}'"):
        llm.generate([PROMPTS[0]], GREEDY, bad)
