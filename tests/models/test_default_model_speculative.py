"""Speculative decoding on the real default model: greedy tokens equal plain decoding for
prompt lookup and for a draft cut from the model itself (its first 6 and last 2 blocks), over
a batch of three chat prompts whose drafts differ in length and acceptance."""

from __future__ import annotations

import pytest

from mlcx.bench.workloads.echo_workload import echo_messages
from mlcx.bench.workloads.truncated_gguf import write_truncated_gguf
from mlcx.compile.model import CompileRequest
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.speculative.config import SpeculativeConfig
from tests.support.compile_cache import compile_model
from tests.support.default_model import default_gguf

pytestmark = pytest.mark.slow
PARAMS = SamplingParams.greedy(max_tokens=64)
QUESTIONS = ["What is the capital of France?", "List three colours, separated by commas."]


@pytest.fixture(scope="module")
def artifact(default_artifact):
    return default_artifact()


@pytest.fixture(scope="module")
def prompts(artifact):
    llm = LLM(artifact)
    chats = [echo_messages()] + [[{"role": "user", "content": q}] for q in QUESTIONS]
    return [llm.chat_prompt(m) for m in chats]


@pytest.fixture(scope="module")
def plain(artifact, prompts):
    return [o.outputs[0].token_ids for o in LLM(artifact).generate(prompts, PARAMS)]


def test_prompt_lookup_keeps_greedy_tokens(artifact, prompts, plain):
    llm = LLM(artifact, EngineConfig(speculative=SpeculativeConfig("ngram", num_tokens=4)))
    assert [o.outputs[0].token_ids for o in llm.generate(prompts, PARAMS)] == plain
    stats = llm.engine.stats()
    assert stats.spec_accepted_tokens > 20  # the echo prompt repeats its paragraph
    assert llm.engine.kv.pool.num_used == 0


def test_a_truncated_self_draft_keeps_greedy_tokens(artifact, prompts, plain, tmp_path):
    cut = write_truncated_gguf(default_gguf(), tmp_path / "draft.gguf", 6, 2)
    draft = compile_model(CompileRequest(model=str(cut), target="cpu", output=tmp_path / "d"))
    config = EngineConfig(speculative=SpeculativeConfig("draft", num_tokens=3, draft=str(draft)))
    llm = LLM(artifact, config)
    assert [o.outputs[0].token_ids for o in llm.generate(prompts, PARAMS)] == plain
    assert llm.engine.stats().spec_proposed_tokens > 0
    assert llm.engine.kv.pool.num_used == 0
