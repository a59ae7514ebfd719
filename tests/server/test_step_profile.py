"""`mlcx bench profile`: a step's time split by phase through the engine's step hooks, on a
tiny compiled model."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from mlcx.bench.measure.step_profile import profile_steps
from mlcx.cli import bench_profile_cmd
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.hooks import NO_HOOKS, PHASES
from mlcx.runtime.sample.params import SamplingParams


def test_every_phase_is_timed_and_the_engine_is_left_as_it_was(artifact):
    engine = Engine(artifact, EngineConfig(max_batch=4))
    breakdown = profile_steps(engine, streams=4, max_tokens=5)
    assert breakdown.tokens == 4 * 5
    assert breakdown.steps >= 5  # one decode step per token at least, all streams together
    assert set(breakdown.phases) == {*PHASES, "other"}
    assert all(breakdown.phases[p] > 0 for p in PHASES)
    assert not engine.has_work()
    assert engine.hooks is NO_HOOKS  # the timing hooks are gone


def test_profiling_does_not_change_the_tokens(artifact):
    engine = Engine(artifact, EngineConfig(max_batch=2))
    profile_steps(engine, streams=2, max_tokens=6)
    llm = LLM(artifact)
    params = SamplingParams.greedy(max_tokens=6, ignore_eos=True)
    plain = llm.generate(["Write a short story about a lighthouse keeper."], params)
    llm.engine = engine
    profiled = llm.generate(["Write a short story about a lighthouse keeper."], params)
    assert plain[0].outputs[0].token_ids == profiled[0].outputs[0].token_ids


def test_the_cli_prints_one_breakdown_per_level(artifact):
    args = ["profile", str(artifact), "-c", "1", "-c", "3"]
    result = CliRunner().invoke(_bench_app(), [*args, "--max-tokens", "3", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [(x["streams"], x["tokens"]) for x in lines] == [(1, 3), (3, 9)]


def test_long_prompts_count_only_the_decode_steps_after_them(artifact):
    engine = Engine(artifact, EngineConfig(max_batch=3))
    breakdown = profile_steps(engine, streams=3, max_tokens=5, prompt_tokens=40)
    # each stream's first token comes from its prefill, left out; the 4 decode steps after it
    # (all three streams together) are what is counted
    assert (breakdown.steps, breakdown.tokens) == (4, 3 * 4)
    assert all(breakdown.phases[p] > 0 for p in PHASES)
    assert not engine.has_work()


def _bench_app() -> typer.Typer:
    bench = typer.Typer()
    bench.callback()(lambda: None)
    bench_profile_cmd.register(bench)
    return bench
