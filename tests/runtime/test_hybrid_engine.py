"""The engine on a real compiled hybrid model (the tiny Qwen3.5 of tests/support/hybrid_models.py,
cpu, prefill chunk 64): sequences of any length batched together give the tokens each gives
alone, a chat's second turn resumes from the state the first turn saved, and an aborted request
gives its state slot back."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams
from tests.support.hybrid_models import compiled_hybrid

MAX_TOKENS = 12
GREEDY = SamplingParams.greedy(max_tokens=MAX_TOKENS, ignore_eos=True)
LENGTHS = [5, 140, 17, 64, 1, 90, 33, 66]  # across and at the 64-token chunk edges


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return str(compiled_hybrid(tmp_path_factory, "qwen3_5"))


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    rng = np.random.default_rng(11)
    return [rng.integers(3, 380, n).tolist() for n in LENGTHS]


@pytest.fixture(scope="module")
def alone(artifact, prompts) -> list[list[int]]:
    llm = LLM(artifact, EngineConfig(max_batch=1, enable_prefix_caching=False))
    return [llm.generate([p], GREEDY)[0].outputs[0].token_ids for p in prompts]


def test_eight_sequences_batched_equal_each_alone(artifact, prompts, alone):
    llm = LLM(artifact, EngineConfig(max_batch=8))
    out = [out.outputs[0].token_ids for out in llm.generate(prompts, GREEDY)]
    assert out == alone
    stats = llm.engine.stats()
    assert (stats.state_slots_in_use, llm.engine.kv.pool.num_used) == (0, 0)


def _run(engine: Engine, request_id: str, prompt: list[int]) -> list[int]:
    engine.add_request(request_id, prompt, GREEDY)
    tokens = []
    while engine.has_work():
        tokens += [t for d in engine.step() for t in d.token_ids]
    return tokens


def test_a_second_chat_turn_resumes_from_the_saved_state(artifact, prompts, alone):
    engine = Engine(artifact, EngineConfig(max_batch=2))
    first = prompts[6]
    reply = _run(engine, "turn-1", first)
    assert reply == alone[6]
    second = first + reply + [7, 8, 9]
    tokens = _run(engine, "turn-2", second)
    fresh = LLM(artifact, EngineConfig(max_batch=1, enable_prefix_caching=False))
    assert tokens == fresh.generate([second], GREEDY)[0].outputs[0].token_ids
    stats = engine.stats()
    assert (stats.state_checkpoint_hits, stats.prefix_hits_without_state) == (1, 0)
    page = engine.artifact.config.page_size
    assert stats.prefix_hit_tokens == (len(first) + len(reply) - 1) // page * page > 0


def test_an_aborted_request_frees_its_slot(artifact, prompts, alone):
    engine = Engine(artifact, EngineConfig(max_batch=2))
    engine.add_request("gone", prompts[0], GREEDY)
    engine.add_request("kept", prompts[2], GREEDY)
    out: dict[str, list[int]] = {"kept": [], "gone": []}

    def step() -> None:
        for delta in engine.step():
            out[delta.request_id].extend(delta.token_ids)

    step()
    step()
    assert engine.stats().state_slots_in_use == 2
    engine.abort("gone")
    while engine.has_work():
        step()
    assert out["kept"] == alone[2] and len(out["gone"]) < MAX_TOKENS
    assert engine.stats().state_slots_in_use == 0
