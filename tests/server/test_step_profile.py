"""`mlcx bench serve --profile`: a step's time split by phase, on a tiny compiled model."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mlcx.bench.step_profile import PHASES, profile_steps
from mlcx.runtime.engine import Engine
from mlcx.runtime.engine_config import EngineConfig
from mlcx.runtime.llm import LLM
from mlcx.runtime.sampling_params import SamplingParams
from tests.server.test_bench_serve import _bench_app


def test_every_phase_is_timed_and_the_engine_is_left_as_it_was(artifact):
    engine = Engine(artifact, EngineConfig(max_running=4))
    breakdown = profile_steps(engine, streams=4, max_tokens=5)
    assert breakdown.tokens == 4 * 5
    assert breakdown.steps >= 5  # one decode step per token at least, all streams together
    assert set(breakdown.phases) == {*PHASES, "other"}
    assert all(breakdown.phases[p] > 0 for p in PHASES)
    assert not engine.has_work()
    for owner, method in (m for methods in PHASES.values() for m in methods):
        assert method not in vars(getattr(engine, owner))  # the shadowing timers are gone


def test_profiling_does_not_change_the_tokens(artifact):
    engine = Engine(artifact, EngineConfig(max_running=2))
    profile_steps(engine, streams=2, max_tokens=6)
    llm = LLM(artifact)
    params = SamplingParams.greedy(max_tokens=6, ignore_eos=True)
    plain = llm.generate(["Write a short story about a lighthouse keeper."], params)
    llm.engine = engine
    profiled = llm.generate(["Write a short story about a lighthouse keeper."], params)
    assert plain[0][0].token_ids == profiled[0][0].token_ids


def test_the_cli_prints_one_breakdown_per_level(artifact):
    args = ["serve", "--profile", str(artifact), "-c", "1", "-c", "3"]
    result = CliRunner().invoke(_bench_app(), [*args, "--max-tokens", "3", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [(x["streams"], x["tokens"]) for x in lines] == [(1, 3), (3, 9)]


def test_long_prompts_count_only_the_decode_steps_after_them(artifact):
    engine = Engine(artifact, EngineConfig(max_running=3))
    breakdown = profile_steps(engine, streams=3, max_tokens=5, prompt_tokens=40)
    # each stream's first token comes from its prefill, left out; the 4 decode steps after it
    # (all three streams together) are what is counted
    assert (breakdown.steps, breakdown.tokens) == (4, 3 * 4)
    assert all(breakdown.phases[p] > 0 for p in PHASES)
    assert not engine.has_work()


def test_prompt_tokens_needs_the_profile(artifact):
    args = ["serve", "--url", "http://127.0.0.1:9", "--prompt-tokens", "40"]
    result = CliRunner().invoke(_bench_app(), args)
    assert result.exit_code != 0 and "--profile" in result.output
