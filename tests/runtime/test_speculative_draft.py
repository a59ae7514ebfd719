"""Draft-model speculation on tiny random models that share a tokenizer: greedy output equals
plain decoding (a different model as draft: few drafts kept; the target itself as draft: all
kept), under batching, chunked prefill and preemption; sampled runs are reproducible; neither
KV cache keeps a block; a draft whose tokenizer differs is refused by name."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from mlcx.errors import ArtifactError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.speculative.config import SpeculativeConfig
from tests.support.cli import one_line_error, run_mlcx
from tests.support.tiny_models import TinySpec

GREEDY = SamplingParams.greedy(max_tokens=30, ignore_eos=True)


@pytest.fixture(scope="module")
def target(compiled):
    return compiled()


@pytest.fixture(scope="module")
def draft(compiled):
    return compiled(TinySpec(layers=1, seed=1))


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    rng = random.Random(2)
    return [[rng.randrange(3, 384) for _ in range(rng.randrange(3, 50))] for _ in range(6)]


@pytest.fixture(scope="module")
def plain(target, prompts):
    return [o.outputs[0].token_ids for o in LLM(target, EngineConfig()).generate(prompts, GREEDY)]


def spec_config(draft, **kw) -> EngineConfig:
    speculative = SpeculativeConfig("draft", num_tokens=3, draft=str(draft), max_batch=8)
    return EngineConfig(speculative=speculative, **kw)


def assert_clean(llm: LLM) -> None:
    assert llm.engine.kv.pool.num_used == 0
    assert llm.engine.speculator.proposer.kv.pool.num_used == 0


@pytest.mark.parametrize(
    "kw",
    [{}, {"prefill_chunk": 7, "max_batch": 3}, {"kv_blocks": 12, "prefill_chunk": 16}],
    ids=["default", "chunked-batch-3", "tight-pool"],
)
def test_greedy_output_equals_plain_decoding(target, draft, prompts, plain, kw):
    llm = LLM(target, spec_config(draft, **kw))
    assert [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY)] == plain
    stats = llm.engine.stats()
    assert stats.spec_proposed_tokens > 0
    assert stats.spec_accepted_tokens < stats.spec_proposed_tokens
    assert_clean(llm)
    if "kv_blocks" in kw:
        assert stats.preemptions > 0


def test_the_target_as_its_own_draft_is_always_right(target, prompts, plain):
    llm = LLM(target, spec_config(target))
    assert [o.outputs[0].token_ids for o in llm.generate(prompts, GREEDY)] == plain
    stats = llm.engine.stats()
    assert stats.spec_accepted_tokens == stats.spec_proposed_tokens > 0
    assert_clean(llm)


def test_sampled_draft_speculation_is_reproducible(target, draft, prompts):
    params = SamplingParams(max_tokens=20, ignore_eos=True, temperature=0.8, top_k=20, seed=3)
    runs = []
    for _ in range(2):
        llm = LLM(target, spec_config(draft))
        runs.append([o.outputs[0].token_ids for o in llm.generate(prompts, params)])
        assert llm.engine.stats().spec_proposed_tokens > 0
        assert_clean(llm)
    assert runs[0] == runs[1]


def test_a_draft_with_another_tokenizer_is_refused(target, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(target, other)
    path = other / "mlcx-tokenizer.json"
    assets = json.loads(path.read_text())
    path.write_text(json.dumps({**assets, "eos_token_ids": [1]}))
    with pytest.raises(ArtifactError, match="another EOS token ids than the target"):
        LLM(target, spec_config(other))
    result = run_mlcx(
        "generate", str(target), "-p", "hi", "--speculative", "draft", "--draft", str(other)
    )
    assert "EOS token ids" in one_line_error(result)


def test_generate_command_with_a_draft_matches_plain(target, draft):
    args = ["generate", str(target), "-p", "hello world", "--max-tokens", "16"]
    args += ["--temperature", "0", "--json"]
    want = json.loads(run_mlcx(*args).stdout)
    got = run_mlcx(*args, "--speculative", "draft", "--draft", str(draft), "--num-speculative", "3")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["token_ids"] == want["token_ids"]
    lone = run_mlcx(*args, "--speculative", "draft")
    assert "--speculative draft --draft" in one_line_error(lone)
