"""Speculative decoding in the engine on a tiny random model: greedy output equals plain
decoding token for token, for prompt lookup and for an oracle proposer that drafts the true
continuation with random errors at random places (so every step mixes fully kept, partly
kept and rejected drafts of different lengths), under continuous batching, chunked prefill,
preemption, stop tokens, stop strings and max_tokens; no KV block stays referenced."""

from __future__ import annotations

import random

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.speculative.config import SpeculativeConfig
from mlcx.runtime.speculative.proposer import Draft
from mlcx.runtime.speculative.speculator import Speculator

GREEDY = SamplingParams.greedy(max_tokens=40, ignore_eos=True)
NGRAM = dict(speculative=SpeculativeConfig("ngram", num_tokens=4, max_batch=16))


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled()


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    """Prompts that repeat a segment, as text that quotes itself does."""
    rng = random.Random(0)
    out = []
    for _ in range(8):
        segment = [rng.randrange(3, 384) for _ in range(rng.randrange(3, 20))]
        out.append(segment * rng.randint(1, 4) + [rng.randrange(3, 384) for _ in range(5)])
    return out


@pytest.fixture(scope="module")
def plain(artifact, prompts):
    llm = LLM(artifact, EngineConfig())
    return [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY)]


class OracleProposer:
    """Drafts the reference continuation, 0..k tokens, one of them wrong half the time."""

    def __init__(self, reference: dict[tuple, list[int]], seed: int):
        self.reference = reference
        self.rng = random.Random(seed)

    def propose(self, requests):
        drafts = {}
        for req in requests:
            n = len(req.token_ids)
            prompt = max((p for p in self.reference if list(p) == req.token_ids[: len(p)]), key=len)
            full = self.reference[prompt]
            draft = full[n : n + self.rng.randint(0, req.k)]
            if draft and self.rng.random() < 0.5:
                draft[self.rng.randrange(len(draft))] = self.rng.randrange(3, 384)
            if draft:
                drafts[req.seq_id] = Draft(tuple(draft))
        return drafts

    def release(self, live):
        pass


def oracle_llm(artifact, config, prompts, plain, seed=0) -> LLM:
    llm = LLM(artifact, config)
    reference = {tuple(p): [*p, *out] for p, out in zip(prompts, plain, strict=True)}
    llm.engine.speculator = Speculator(OracleProposer(reference, seed), 6, 16, token_cost=0.0)
    return llm


def test_prompt_lookup_greedy_equals_plain_decoding(artifact, prompts, plain):
    llm = LLM(artifact, EngineConfig(**NGRAM))
    assert [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY)] == plain
    stats = llm.engine.stats()
    assert 0 < stats.spec_accepted_tokens < stats.spec_proposed_tokens
    assert stats.computed_tokens > sum(map(len, prompts)) + sum(map(len, plain)) - len(plain)
    assert llm.engine.kv.pool.num_used == 0


@pytest.mark.parametrize(
    "config",
    [
        EngineConfig(),
        EngineConfig(prefill_chunk=7, max_batch=3),
        EngineConfig(kv_blocks=14, prefill_chunk=16),
        EngineConfig(kv_blocks=14, prefill_chunk=5, enable_prefix_caching=False),
    ],
    ids=["default", "chunked-batch-3", "tight-pool", "tight-pool-no-prefix-cache"],
)
def test_oracle_drafts_of_mixed_lengths_keep_greedy_output(artifact, prompts, plain, config):
    llm = oracle_llm(artifact, config, prompts, plain)
    assert [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY)] == plain
    stats = llm.engine.stats()
    assert 0 < stats.spec_accepted_tokens < stats.spec_proposed_tokens
    assert llm.engine.kv.pool.num_used == 0
    if config.kv_blocks:
        assert stats.preemptions > 0


def test_drafts_stop_at_stop_tokens_strings_and_max_tokens(artifact, prompts, plain):
    """A kept draft token that is a stop token (or completes a stop string, or reaches
    max_tokens) ends the choice there, as plain decoding does."""
    llm = LLM(artifact, EngineConfig())
    text = llm.tokenizer.decode(plain[0][10:14])
    cases = [
        GREEDY.with_updates(stop_token_ids=[plain[1][12]]),
        GREEDY.with_updates(stop=[text]) if text.strip() else GREEDY,
        GREEDY.with_updates(max_tokens=9),
    ]
    for params in cases:
        want = [
            (o.outputs[0].token_ids, o.outputs[0].text, o.outputs[0].finish_reason)
            for o in llm.generate(prompts, params)
        ]
        spec = oracle_llm(artifact, EngineConfig(), prompts, plain, seed=3)
        got = [
            (o.outputs[0].token_ids, o.outputs[0].text, o.outputs[0].finish_reason)
            for o in spec.generate(prompts, params)
        ]
        assert got == want
        assert spec.engine.kv.pool.num_used == 0


def test_speculation_turns_off_when_the_batch_is_large(artifact, prompts, plain):
    """8 requests of different lengths: no drafts while more than 4 run, drafts after."""
    engine = LLM(
        artifact, EngineConfig(speculative=SpeculativeConfig("ngram", num_tokens=4, max_batch=4))
    ).engine
    tokens: dict[str, list[int]] = {}
    for i, prompt in enumerate(prompts):
        engine.add_request(str(i), prompt, GREEDY.with_updates(max_tokens=5 + 5 * i))
    while engine.has_work():
        for delta in engine.step():
            tokens.setdefault(delta.request_id, []).extend(delta.token_ids)
            if delta.finished and delta.request_id == "3":  # 5 were running until now
                assert engine.stats().spec_proposed_tokens == 0
    assert [tokens[str(i)] for i in range(8)] == [out[: 5 + 5 * i] for i, out in enumerate(plain)]
    stats = engine.stats()
    assert stats.spec_off_steps > 0 and stats.spec_proposed_tokens > 0


def test_constrained_and_logprobs_choices_decode_plainly(artifact, prompts):
    from mlcx.runtime.structured.constraint import Constraint

    params = [
        GREEDY.with_updates(constraint=Constraint("regex", "[a-z ]{5,30}"), ignore_eos=False),
        GREEDY.with_updates(logprobs=True, top_logprobs=2),
    ]
    for p in params:
        want = LLM(artifact, EngineConfig()).generate(prompts[:3], p)
        spec = LLM(artifact, EngineConfig(**NGRAM))
        got = spec.generate(prompts[:3], p)
        assert [o.outputs[0].token_ids for o in got] == [o.outputs[0].token_ids for o in want]
        assert [o.outputs[0].logprobs for o in got] == [o.outputs[0].logprobs for o in want]
        assert spec.engine.stats().spec_proposed_tokens == 0


def test_config_refuses_unknown_proposers_and_a_stray_draft():
    with pytest.raises(ValueError, match="choose from ngram, draft"):
        SpeculativeConfig("medusa")
    with pytest.raises(ValueError, match="--speculative draft --draft"):
        SpeculativeConfig("ngram", draft="x")


def test_sampled_speculation_is_seeded_and_leaks_nothing(artifact, prompts, plain):
    params = SamplingParams(max_tokens=30, ignore_eos=True, temperature=0.01, top_p=0.9, seed=4)
    runs = []
    for _ in range(2):
        llm = oracle_llm(artifact, EngineConfig(), prompts, plain, seed=1)
        runs.append([o.outputs[0].token_ids for o in llm.generate(prompts, params)])
        assert llm.engine.kv.pool.num_used == 0
        assert llm.engine.stats().spec_accepted_tokens > 0
    assert runs[0] == runs[1] and all(len(t) == 30 for t in runs[0])
