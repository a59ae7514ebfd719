"""The engine on a hybrid "state model" (tests/support/state_model.py): every configuration of
batching, chunking, preemption, forking and prefix reuse must produce the tokens of the model
run alone, token by token, with its state in hand (`reference_greedy`), and leave no state slot
held once the work is done."""

from __future__ import annotations

import random

import pytest

from mlcx.errors import InvalidFieldError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.speculative.config import SpeculativeConfig
from tests.support.state_model import PAGE, VOCAB, reference_greedy, registered, write_artifact

MAX_TOKENS = 20
GREEDY = SamplingParams.greedy(max_tokens=MAX_TOKENS, ignore_eos=True)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    with registered():
        yield str(write_artifact(tmp_path_factory.mktemp("state-model")))


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    rng = random.Random(0)
    return [[rng.randrange(1, VOCAB) for _ in range(rng.randrange(5, 60))] for _ in range(8)]


@pytest.fixture(scope="module")
def alone(prompts) -> list[list[int]]:
    return [reference_greedy(p, MAX_TOKENS) for p in prompts]


CONFIGS = {
    "default": EngineConfig(),
    "chunk-7": EngineConfig(prefill_chunk=7, max_batch=4),
    "slots-run-out": EngineConfig(max_batch=3, prefill_chunk=16),
    "tight-pool": EngineConfig(kv_blocks=20, prefill_chunk=16),
    "tight-pool-no-checkpoints": EngineConfig(kv_blocks=20, prefill_chunk=16, state_checkpoints=0),
    "no-prefix-cache": EngineConfig(kv_blocks=20, prefill_chunk=5, enable_prefix_caching=False),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_eight_sequences_batched_equal_each_alone(artifact, prompts, alone, name):
    llm = LLM(artifact, CONFIGS[name])
    out = [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY)]
    assert out == alone
    stats = llm.engine.stats()
    assert (stats.state_slots_in_use, llm.engine.kv.pool.num_used) == (0, 0)
    if name.startswith("tight-pool"):
        assert stats.preemptions > 0
    elif name in ("default", "chunk-7", "slots-run-out"):  # as wide as the slots allow
        widest = max(len(s) for s in llm.engine.runner.slots_seen)
        assert widest == min(8, CONFIGS[name].max_batch)


def test_chunked_prefill_continues_the_state_across_steps(artifact, prompts, alone):
    engine = Engine(artifact, EngineConfig(prefill_chunk=6, max_batch=1))
    long_prompt = prompts[3] + prompts[4]
    engine.add_request("long", long_prompt, GREEDY)
    tokens, steps = [], 0
    while engine.has_work():
        tokens += [t for d in engine.step() for t in d.token_ids]
        steps += 1
    assert tokens == reference_greedy(long_prompt, MAX_TOKENS)
    assert steps >= len(long_prompt) // 6 + MAX_TOKENS - 1


def test_n_choices_fork_the_state(artifact, prompts, alone):
    llm = LLM(artifact, EngineConfig(max_batch=4, prefill_chunk=16))
    [out] = llm.generate([prompts[0]], GREEDY.with_updates(n=3))
    assert [c.token_ids for c in out.outputs] == [alone[0]] * 3
    assert llm.engine.stats().state_slots_in_use == 0
    with pytest.raises(InvalidFieldError, match="n=5 choices"):
        llm.generate([prompts[0]], GREEDY.with_updates(n=5))


def run(engine: Engine, request_id: str, prompt: list[int], params=GREEDY) -> tuple[list, int]:
    """(tokens, tokens the model computed) of one request run to the end."""
    before = engine.stats().computed_tokens
    engine.add_request(request_id, prompt, params)
    tokens = []
    while engine.has_work():
        tokens += [t for d in engine.step() for t in d.token_ids]
    return tokens, engine.stats().computed_tokens - before


def test_a_second_chat_turn_resumes_from_the_first_turns_saved_state(artifact, prompts):
    engine = Engine(artifact, EngineConfig())
    first = prompts[1]
    reply, _ = run(engine, "turn-1", first)
    second = first + reply + [5, 6, 7]
    tokens, computed = run(engine, "turn-2", second)
    assert tokens == reference_greedy(second, MAX_TOKENS)
    # the first turn computed all but its last token; it saved at its last block boundary
    resumed = (len(first) + len(reply) - 1) // PAGE * PAGE
    stats = engine.stats()
    assert (stats.state_checkpoint_hits, stats.prefix_hits_without_state) == (1, 0)
    assert stats.prefix_hit_tokens == resumed
    assert computed == len(second) - resumed + MAX_TOKENS - 1


def test_without_a_saved_state_the_hit_is_skipped_and_counted(artifact, prompts):
    engine = Engine(artifact, EngineConfig(state_checkpoints=0))
    first = prompts[1]
    reply, _ = run(engine, "turn-1", first)
    second = first + reply + [5, 6, 7]
    tokens, computed = run(engine, "turn-2", second)
    assert tokens == reference_greedy(second, MAX_TOKENS)
    cached = (len(second) - 1) // PAGE * PAGE  # pages the KV prefix cache holds
    stats = engine.stats()
    assert (stats.state_checkpoint_hits, stats.prefix_hits_without_state) == (0, 1)
    assert (stats.prefix_tokens_without_state, stats.prefix_hit_tokens) == (cached, 0)
    assert computed == len(second) + MAX_TOKENS - 1


def test_an_aborted_request_frees_its_slot(artifact, prompts, alone):
    engine = Engine(artifact, EngineConfig(max_batch=2))
    engine.add_request("gone", prompts[0], GREEDY)
    engine.add_request("kept", prompts[1], GREEDY)
    engine.step()
    engine.step()
    assert engine.stats().state_slots_in_use == 2
    engine.abort("gone")
    engine.add_request("next", prompts[2], GREEDY)
    out: dict[str, list[int]] = {"kept": [], "next": []}
    while engine.has_work():
        for delta in engine.step():
            out.get(delta.request_id, []).extend(delta.token_ids)
    assert out["next"] == alone[2]
    assert engine.stats().state_slots_in_use == 0


def test_speculative_decoding_is_refused_with_the_reason(artifact):
    with pytest.raises(ValueError, match="hybrid model: rejected drafts would have to roll"):
        Engine(artifact, EngineConfig(speculative=SpeculativeConfig("ngram")))


def test_the_state_bytes_come_out_of_the_cache_budget(artifact):
    engine = Engine(artifact, EngineConfig(max_batch=4, kv_cache_bytes=1 << 20))
    slot_bytes = engine.artifact.config.state_slot_bytes
    assert slot_bytes == 4 * (4 * 3 + 4 * 3 + 2 * 2 * 2)
    assert engine.sizes.num_state_slots == 8  # 4 running, 4 checkpoints
    block = engine.artifact.config.kv_block_bytes
    assert engine.num_blocks == min(((1 << 20) - 8 * slot_bytes) // block, 64 * 4)
    with pytest.raises(ValueError, match="more than kv_cache_bytes"):
        Engine(artifact, EngineConfig(max_batch=4, kv_cache_bytes=8 * slot_bytes))


def _random_run(artifact, seed: int):
    """Requests continue earlier ones (chat turns) or share their starts, arrive and are
    aborted at random: every survivor must get the reference tokens, and nothing stays held."""
    rng = random.Random(seed)
    config = EngineConfig(max_batch=3, kv_blocks=16, prefill_chunk=8, state_checkpoints=2)
    engine = Engine(artifact, config)
    params = GREEDY.with_updates(max_tokens=6)
    history = [[rng.randrange(1, VOCAB) for _ in range(rng.randrange(3, 20))]]
    outputs: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    aborted: set[str] = set()
    for i in range(24):
        base = rng.choice(history)[:40]  # prompt and reply fit the 64 tokens of 16 blocks
        cut = len(base) if rng.random() < 0.5 else rng.randrange(1, len(base) + 1)
        prompt = base[:cut] + [rng.randrange(1, VOCAB) for _ in range(rng.randrange(1, 9))]
        n = rng.choice((1, 1, 2))  # forks share the state copied at the first token
        engine.add_request(f"r{i}", prompt, params.with_updates(n=n))
        outputs.update({(f"r{i}", index): (prompt, []) for index in range(n)})
        if rng.random() < 0.2:
            engine.abort(f"r{i}")
            aborted.add(f"r{i}")
        for _ in range(rng.randrange(0, 4)):
            for delta in engine.step():
                outputs[delta.request_id, delta.index][1].extend(delta.token_ids)
        done = [p + out for p, out in outputs.values() if len(out) == 6]
        history = (history + done)[-6:]
    while engine.has_work():
        for delta in engine.step():
            outputs[delta.request_id, delta.index][1].extend(delta.token_ids)
    for (rid, index), (prompt, tokens) in outputs.items():
        if rid not in aborted:
            assert tokens == reference_greedy(prompt, 6), (seed, rid, index)
    stats = engine.stats()
    assert (stats.state_slots_in_use, engine.kv.pool.num_used, stats.running) == (0, 0, 0)
    return stats


def test_random_arrivals_aborts_and_shared_prefixes(artifact):
    """Under few checkpoint slots and a tight KV pool (evictions, preemptions)."""
    runs = [_random_run(artifact, seed) for seed in range(4)]
    assert sum(s.state_checkpoint_hits for s in runs) > 0
    assert sum(s.prefix_hits_without_state for s in runs) > 0
    assert sum(s.preemptions for s in runs) > 0
