"""`mlcx bench lora` on the tiny Llama: its random adapters are PEFT adapters (peft runs them
as mlcx does), its mixed run decodes each stream with its own adapter, its report has the three
runs, and the command refuses what it cannot bench. Speeds themselves are never asserted."""

from __future__ import annotations

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from mlcx.artifact.config import Artifact
from mlcx.bench.lora import MESSAGES, decode_run, run_lora_bench
from mlcx.bench.workloads.random_lora import random_adapter
from mlcx.cli import bench_lora_cmd
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.lora.slots import LoraSlots
from mlcx.runtime.sample.params import SamplingParams
from tests.lora.conftest import SPEC
from tests.support.harness import Harness, hf_logits
from tests.support.lora_models import peft_model
from tests.support.tiny_models import load_reference

PROMPT = [5, 17, 42, 9, 100, 3, 77]


def test_a_random_adapter_runs_in_peft_as_in_mlcx(lora_base, lora_artifact, tmp_path, monkeypatch):
    monkeypatch.setenv("MLCX_CACHE", str(tmp_path))
    folder = random_adapter(str(lora_base), seed=5)
    assert random_adapter(str(lora_base), seed=5) == folder  # cached
    assert random_adapter(str(lora_base), seed=6) != folder
    want = hf_logits(peft_model(lora_base, folder), PROMPT)
    h = Harness(lora_artifact)
    LoraSlots.load(Artifact(lora_artifact), [("r", str(folder))], h.runner)
    got = h.step({0: PROMPT}, all_rows=True, lora={0: (1, 1.0)})[0]
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert np.abs(want - hf_logits(load_reference(lora_base), PROMPT)).max() > 1e-3


def test_the_mixed_run_decodes_each_stream_with_its_adapter(lora_artifact, adapters):
    llm = LLM(lora_artifact, EngineConfig(max_batch=4), lora=adapters)
    prompt = llm.chat_prompt(MESSAGES)
    loras = [None, LoraRequest("a1"), LoraRequest("a2"), LoraRequest("a1", 0.5)]
    run = decode_run(llm, prompt, loras, 6)
    assert run.tok_s > 0
    greedy = SamplingParams.greedy(max_tokens=6, ignore_eos=True)
    for lora, tokens in zip(loras, run.tokens, strict=True):
        [alone] = llm.generate([prompt], greedy, lora)
        assert list(tokens) == alone.outputs[0].token_ids, lora
    assert len(set(run.tokens[:3])) == 3  # base, a1 and a2 differ


def test_the_report_has_base_slots_and_mixed(compiled, lora_artifact, adapters):
    said: list[str] = []
    pairs = tuple((name, str(path)) for name, path in adapters.items())
    report = run_lora_bench(str(compiled(SPEC)), str(lora_artifact), pairs, 3, 1, 4, said.append)
    assert said == ["rep 1/1"] and report.adapters == ("a1", "a2") and report.streams == 3
    assert set(report.tok_s) == {"base", "slots", "mixed"} and min(report.tok_s.values()) > 0
    lines = "\n".join(report.lines())
    assert "adapters a1, a2 mixed" in lines and f"({report.ratio('mixed'):.2f}x the base)" in lines
    with pytest.raises(ValueError, match="needs an adapter"):
        run_lora_bench(str(compiled(SPEC)), str(lora_artifact), (), 3)


def test_the_command_refuses_an_artifact_and_no_adapters(lora_base, lora_artifact):
    app = typer.Typer()
    bench_lora_cmd.register(app)
    app.command("other")(lambda: None)  # a group: `lora` stays a subcommand
    for args, error in (
        ([str(lora_artifact), "--random-adapters", "1"], "give the model, not an artifact"),
        ([str(lora_base)], "--random-adapters K"),
    ):
        result = CliRunner().invoke(app, ["lora", *args])
        assert result.exit_code == 2 and error in " ".join(result.output.split()), result.output
