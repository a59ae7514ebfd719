"""Bad inputs reach the user as one-line errors that name the problem, never a traceback.

Compiles refused before any build run through the console entry point in this process
(tests/support/cli.py: the same parsing, errors and exit codes, without a new interpreter's
imports); commands that load an artifact run as real subprocesses."""

from __future__ import annotations

import json
import shutil

import pytest

from mlcx.artifact.weight_shards import read_index
from tests.support.cli import one_line_error, run_mlcx, run_mlcx_here
from tests.support.tiny_gguf import write_tiny_gguf
from tests.support.tiny_models import TinySpec


@pytest.fixture(scope="module")
def folder(tiny_model):
    return tiny_model(TinySpec())


def test_missing_file(tmp_path):
    line = one_line_error(
        run_mlcx_here("compile", str(tmp_path / "nope.gguf"), "-o", str(tmp_path / "out"))
    )
    assert "nope.gguf" in line and "neither an existing path nor a preset" in line


def test_hub_id_offline(tmp_path):
    line = one_line_error(
        run_mlcx_here("compile", "HuggingFaceTB/SmolLM2-135M", "-o", str(tmp_path / "o"))
    )
    assert "model hub id" in line and "offline" in line


def test_truncated_safetensors(folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    line = one_line_error(run_mlcx_here("compile", str(broken), "-o", str(tmp_path / "o")))
    assert "model.safetensors" in line and "truncated" in line


def test_truncated_gguf(folder, tmp_path):
    path = write_tiny_gguf(folder, tmp_path / "t.gguf")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    line = one_line_error(run_mlcx_here("compile", str(path), "-o", str(tmp_path / "o")))
    assert "t.gguf" in line and "GGUF" in line


def test_unsupported_architecture(folder, tmp_path):
    other = tmp_path / "gpt2"
    shutil.copytree(folder, other)
    config = json.loads((other / "config.json").read_text())
    config["architectures"] = ["GPT2LMHeadModel"]
    (other / "config.json").write_text(json.dumps(config))
    line = one_line_error(run_mlcx_here("compile", str(other), "-o", str(tmp_path / "o")))
    assert "GPT2LMHeadModel" in line and "LlamaForCausalLM" in line


def test_malformed_config(folder, tmp_path):
    other = tmp_path / "badjson"
    shutil.copytree(folder, other)
    (other / "config.json").write_text("{not json")
    line = one_line_error(run_mlcx_here("compile", str(other), "-o", str(tmp_path / "o")))
    assert "config.json" in line and "not valid JSON" in line


def test_context_window_over_the_models_fails_before_building(folder, tmp_path):
    out = tmp_path / "o"
    result = run_mlcx_here("compile", str(folder), "--context-window", "1000000", "-o", str(out))
    line = one_line_error(result)
    assert "context window 1000000 exceeds the model's" in line
    assert not out.exists()  # nothing built, converted or written


def test_prompt_over_context_window(compiled):
    artifact = compiled(TinySpec(), "q0f32")
    long_prompt = "hello world " * 300  # the tiny model's window is 256 tokens
    line = one_line_error(run_mlcx("generate", str(artifact), "--prompt", long_prompt))
    assert "context window is 256" in line and "tokens" in line


def test_corrupted_weight_shard(compiled, tmp_path):
    artifact = tmp_path / "art"
    shutil.copytree(compiled(TinySpec(), "q0f32"), artifact)
    shards, _ = read_index(artifact / "params")
    shard = artifact / "params" / shards[0]["file"]
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    line = one_line_error(run_mlcx("generate", str(artifact), "--prompt", "hi"))
    assert shards[0]["file"] in line and "sha256" in line


def test_bad_option_value(compiled):
    line = one_line_error(
        run_mlcx(
            "generate", str(compiled(TinySpec(), "q0f32")), "--prompt", "hi", "--temperature", "-1"
        )
    )
    assert "temperature" in line


def test_an_artifact_of_another_format_asks_for_a_recompile(compiled, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(compiled(), old)
    config = json.loads((old / "mlcx-config.json").read_text())
    (old / "mlcx-config.json").write_text(json.dumps({**config, "format_version": 1}))
    line = one_line_error(run_mlcx("generate", str(old), "-p", "hi"))
    assert "format 1" in line and "recompile the model with this mlcx" in line
