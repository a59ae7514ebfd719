"""The engine under load: continuous batching, chunked prefill, preemption, n > 1 forks.

Every configuration must produce exactly the tokens of one request at a time, and leave no
KV block referenced once the work is done.
"""

from __future__ import annotations

import random

import pytest

from mlcx.errors import QueueFullError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams

GREEDY = SamplingParams.greedy(max_tokens=24, ignore_eos=True)
SEEDED = SamplingParams(max_tokens=24, ignore_eos=True, temperature=1.0, seed=7)


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled()


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    rng = random.Random(0)
    return [[rng.randrange(3, 384) for _ in range(rng.randrange(5, 120))] for _ in range(8)]


@pytest.fixture(scope="module")
def one_at_a_time(artifact, prompts):
    llm = LLM(artifact, EngineConfig(max_batch=1))
    return {
        params: [llm.generate([p], params)[0].outputs[0].token_ids for p in prompts]
        for params in (GREEDY, SEEDED)
    }


CONFIGS = {
    "default": EngineConfig(),
    "chunk-7": EngineConfig(prefill_chunk=7),
    "tight-pool": EngineConfig(kv_blocks=17, prefill_chunk=32),
    "tight-pool-no-prefix-cache": EngineConfig(
        kv_blocks=17, prefill_chunk=5, enable_prefix_caching=False
    ),
    "batch-3": EngineConfig(max_batch=3, prefill_chunk=16),
}


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_batched_tokens_equal_one_at_a_time(artifact, prompts, one_at_a_time, name, params):
    llm = LLM(artifact, CONFIGS[name])
    out = [out.outputs[0].token_ids for out in llm.generate(prompts, params)]
    assert out == one_at_a_time[params]
    assert llm.engine.kv.pool.num_used == 0
    if name.startswith("tight-pool"):
        assert llm.engine.stats().preemptions > 0


def test_n_choices_fork_the_prompt(artifact, prompts, one_at_a_time):
    llm = LLM(artifact, EngineConfig(kv_blocks=20, prefill_chunk=16))
    [out] = llm.generate([prompts[0]], GREEDY.with_updates(n=3))
    assert [c.token_ids for c in out.outputs] == [one_at_a_time[GREEDY][0]] * 3
    seeded = [o.outputs for o in llm.generate([prompts[0]] * 2, SEEDED.with_updates(n=2))]
    assert [c.token_ids for c in seeded[0]] == [c.token_ids for c in seeded[1]]
    assert seeded[0][0].token_ids == one_at_a_time[SEEDED][0]
    assert seeded[0][0].token_ids != seeded[0][1].token_ids
    assert llm.engine.kv.pool.num_used == 0


def test_requests_join_and_leave_a_running_batch(artifact, prompts, one_at_a_time):
    """Random arrivals and aborts between steps: survivors still match, no block leaks."""
    engine = Engine(artifact, EngineConfig(kv_blocks=24, prefill_chunk=16, max_batch=4))
    rng = random.Random(1)
    pending = list(enumerate(prompts)) * 2
    outputs: dict[str, list[int]] = {}
    aborted: set[str] = set()
    while pending or engine.has_work():
        if pending and rng.random() < 0.4:
            index, prompt = pending.pop(0)
            request_id = f"{index}-{len(pending)}"
            engine.add_request(request_id, prompt, GREEDY)
            outputs[request_id] = []
            if rng.random() < 0.25:
                engine.abort(request_id)
                aborted.add(request_id)
        for delta in engine.step():
            outputs[delta.request_id].extend(delta.token_ids)
    for request_id, tokens in outputs.items():
        if request_id not in aborted:
            assert tokens == one_at_a_time[GREEDY][int(request_id.split("-")[0])]
    assert engine.kv.pool.num_used == 0
    assert engine.stats().running == engine.stats().waiting == 0


def test_chunked_prefill_keeps_decodes_moving(artifact, prompts):
    engine = Engine(artifact, EngineConfig(prefill_chunk=16))
    engine.add_request("short", prompts[0][:8], GREEDY.with_updates(max_tokens=200))
    while not engine.step():
        pass
    long_prompt = [t for p in prompts for t in p][:200]
    engine.add_request("long", long_prompt, GREEDY.with_updates(max_tokens=4))
    steps = 0
    while True:
        deltas = engine.step()
        steps += 1
        assert [d.request_id for d in deltas if d.request_id == "short"] == ["short"]
        if any(d.request_id == "long" for d in deltas):
            break
    assert steps >= 200 // 16


def run_alone(engine: Engine, request_id: str, prompt: list[int], params) -> tuple[list, int]:
    """(tokens, tokens the model computed) of one request run to the end."""
    before = engine.stats().computed_tokens
    engine.add_request(request_id, prompt, params)
    tokens = []
    while engine.has_work():
        tokens += [t for d in engine.step() for t in d.token_ids]
    return tokens, engine.stats().computed_tokens - before


def test_prefix_cache_skips_the_shared_prefill(artifact, prompts):
    system = [t for p in prompts for t in p][:160]
    question = [17, 42, 99, 100, 101]
    params = GREEDY.with_updates(max_tokens=8)
    cold = Engine(artifact, EngineConfig(prefill_chunk=64, enable_prefix_caching=False))
    expected, _ = run_alone(cold, "cold", system + question, params)

    engine = Engine(artifact, EngineConfig(prefill_chunk=64))
    run_alone(engine, "a", system + [5, 6, 7], params)
    tokens, computed = run_alone(engine, "b", system + question, params)
    page = engine.artifact.config.page_size
    hit = (len(system) // page) * page
    assert engine.stats().prefix_hit_tokens == hit
    assert computed == len(system) + len(question) - hit + params.max_tokens - 1
    assert tokens == expected


def test_waiting_queue_is_bounded(artifact):
    engine = Engine(artifact, EngineConfig(max_waiting=2))
    engine.add_request("a", "hello", GREEDY)
    engine.add_request("b", "hello", GREEDY)
    with pytest.raises(QueueFullError, match="2 requests are waiting"):
        engine.add_request("c", "hello", GREEDY)
    engine.step()  # both are admitted: room again
    engine.add_request("c", "hello", GREEDY)


def test_a_request_id_in_flight_is_refused_even_before_it_is_scheduled(artifact):
    engine = Engine(artifact)
    engine.add_request("a", [5, 6, 7], GREEDY)  # queued in the inbox, not yet scheduled
    with pytest.raises(ValueError, match="'a' is already in flight"):
        engine.add_request("a", [8, 9], GREEDY)
    engine.step()  # the first one now in the scheduler
    with pytest.raises(ValueError, match="already in flight"):
        engine.add_request("a", [8, 9], GREEDY)
    while engine.has_work():
        engine.step()
    engine.add_request("a", [8, 9], GREEDY)  # finished ids can be reused
