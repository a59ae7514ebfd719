"""`mlcx bench`'s random hybrid models (mlcx/bench/workloads/random_hybrids.py): Qwen3.5's and
LFM2's GGUF layouts, read by mlcx as their family and loaded by llama.cpp's own llama-bench
(where the peer's binaries are built); the named shapes are the published sizes; the report
puts a hybrid's state bytes per sequence beside its KV bytes per token."""

from __future__ import annotations

import dataclasses
import json
import subprocess

import pytest

from mlcx.bench.peers.llama_server import BUILD
from mlcx.bench.workloads.random_hybrids import HYBRID_MODELS, HybridShape, write_hybrid_gguf
from mlcx.frontends.source import load_source
from tests.support.cli import run_mlcx

TINY = {
    "qwen35": HybridShape(
        "qwen35", 64, 128, 4, 4, 2, 16, 300, (3,), 1e7, 4, 2, 4, 16, context=256
    ),
    "lfm2": HybridShape(
        "lfm2", 64, 128, 4, 4, 2, 16, 300, (1, 3), 1e6, conv_kernel=3, context=256, rms_eps=1e-5
    ),
}  # fmt: skip


@pytest.mark.parametrize("arch", list(TINY))
def test_a_random_hybrid_reads_as_its_family(arch, tmp_path):
    shape = TINY[arch]
    source = load_source(str(write_hybrid_gguf(shape, tmp_path / "h.gguf")))
    cfg = source.config
    assert source.arch.name == {"qwen35": "qwen3_5", "lfm2": "lfm2"}[arch]
    assert cfg.state_layers == tuple(i for i in range(4) if i not in shape.attention_layers)
    assert (cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (64, 4, 2, 16)
    if arch == "qwen35":
        assert (cfg.delta_k_heads, cfg.delta_v_heads, cfg.delta_k_dim) == (2, 4, 16)
        assert cfg.rope_dim == 4 and cfg.attn_output_gate
    else:
        assert cfg.conv_kernel == 3 and cfg.tie_word_embeddings


def _parameters(shape: HybridShape) -> int:
    """Weights of the text model (the head tied)."""
    h, d, attn = shape.hidden, shape.head_dim, len(shape.attention_layers)
    gate = 2 if shape.arch == "qwen35" else 1
    attention = h * d * (shape.heads * (gate + 1) + 2 * shape.kv_heads)
    if shape.arch == "qwen35":
        keys = shape.linear_k_heads * shape.linear_head_dim
        values = shape.linear_v_heads * shape.linear_head_dim
        state = h * (2 * keys + 3 * values)
    else:
        state = 4 * h * h
    mlp = 3 * h * shape.intermediate
    return shape.vocab * h + attn * attention + (shape.layers - attn) * state + shape.layers * mlp


def test_the_named_shapes_have_the_published_sizes():
    qwen, lfm = HYBRID_MODELS["qwen3.5-2b-random"], HYBRID_MODELS["lfm2-1.2b-random"]
    assert 1.8e9 < _parameters(qwen) < 2.0e9  # the text model of Qwen3.5-2B
    assert 1.1e9 < _parameters(lfm) < 1.25e9
    assert qwen.attention_layers == tuple(range(3, 24, 4))


@pytest.mark.parametrize("arch", list(TINY))
def test_llama_cpp_loads_a_random_hybrid(arch, tmp_path):
    binary = BUILD.bin_dir() / "llama-bench"
    if not binary.exists():
        pytest.skip("llama.cpp's CPU binaries are not built (mlcx bench --against llama.cpp)")
    path = write_hybrid_gguf(dataclasses.replace(TINY[arch], vocab=512), tmp_path / "h.gguf")
    done = subprocess.run(
        [str(binary), "-m", str(path), "-p", "8", "-n", "4", "-r", "1", "-t", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert arch in done.stdout or "tg4" in done.stdout


def test_the_report_puts_the_state_beside_the_kv_cache():
    from mlcx.bench.report import BenchReport
    from mlcx.bench.workloads.workload import Speed, Workload

    workload = Workload(prompt_tokens=64, decode_tokens=8, reps=1)
    report = BenchReport(
        model="m",
        artifact="a",
        target="cpu",
        workload=workload,
        threads=1,
        kv_dtype="float16",
        speeds={"mlcx": Speed(10.0, 5.0)},
        devices={},
        commands={},
        compile_seconds=None,
        peak_memory_bytes=0,
        weight_bytes_per_token=1000,
        kv_bytes_per_token=2048,
        read_bandwidth=1e9,
        state_bytes_per_sequence=3 * 2**20,
    )
    assert "2.0 KiB per token of context; state 3.00 MiB per sequence" in report.lines()[1]
    context = 64 + (8 + 1) / 2
    assert report.decode_bytes_per_token == 1000 + context * 2048 + 3 * 2**20


def test_the_profile_of_a_hybrid_gives_its_sequence_a_state_slot(tmp_path):
    """`--profile` times a hybrid model's steps as the bench runs them: its one sequence has a
    state slot (the runner refuses a hybrid without one)."""
    gguf = write_hybrid_gguf(TINY["qwen35"], tmp_path / "h.gguf")
    args = ("--prompt", "8", "--decode", "2", "--reps", "1", "--threads", "1")
    result = run_mlcx("bench", str(gguf), *args, "--profile", "--json")
    assert result.returncode == 0, result.stderr
    prefill, decode = json.loads(result.stdout)["profile"]
    assert (prefill["tokens"], decode["tokens"]) == (8, 1)
    for step in (prefill, decode):
        calls = {k["kernel"]: k["calls"] for k in step["kernels"]}
        # the one attention layer (3) of four; the other three keep the state
        assert sum(n for k, n in calls.items() if "attention" in k) == 1, calls
