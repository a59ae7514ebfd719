"""`mlcx bench` on a compiled tiny model: the report's numbers come from the real files and
the real run. Speeds themselves are never asserted (no timed tests)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from tests.support.cli import one_line_error, run_mlcx, run_mlcx_here
from tests.support.tiny_models import TinySpec

# tests/models/test_quantized_vs_hf.py's model: the session compiles its q4f32 artifact once
SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=4)


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(SPEC, "q4f32")


def _bench(*args: str):
    return run_mlcx("bench", *args, "--prompt", "24", "--decode", "6", "--reps", "2", "--json")


def test_bench_reports_speeds_and_the_bandwidth_bound(artifact):
    result = _bench(str(artifact), "--threads", "1")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["threads"] == 1 and report["workload"]["prompt_tokens"] == 24
    assert report["kv_dtype"] == "float32"  # an artifact keeps its own cache dtype
    speed = report["speeds"]["mlcx"]
    assert speed["prefill"] > 0 and speed["decode"] > 0
    assert report["ratios"] == {} and report["compile_seconds"] is None
    # An untied model reads every matrix but only one embedding row per token.
    arrays = dict(load_arrays(Artifact(artifact).params_dir))
    matrices = sum(np.asarray(a).nbytes for n, a in arrays.items() if not n.startswith("embed."))
    assert report["weight_bytes_per_token"] == matrices
    # KV per token of context: K and V of each layer's kv heads, f32 elements
    kv = SPEC.layers * 2 * SPEC.kv_heads * (SPEC.hidden // SPEC.heads) * 4
    assert report["kv_bytes_per_token"] == kv
    # decode step i of 6 after 24 prompt tokens reads the weights and 24 + i + 1 tokens' KV
    per_step = [matrices + (24 + i + 1) * kv for i in range(6)]
    bound = report["read_bandwidth"] / (sum(per_step) / 6)
    assert report["decode_bound"] == pytest.approx(bound)
    assert report["decode_bound_fraction"] == pytest.approx(speed["decode"] / bound)
    assert report["peak_memory_bytes"] > 0
    assert report["target"] == "cpu" and report["devices"] == {"mlcx": "cpu"}
    assert report["profile"] == [] and report["commands"] == {}


def test_bench_compiles_with_llama_cpp_s_f16_kv_cache(tiny_model, tmp_path):
    result = run_mlcx(
        "bench",
        str(tiny_model(SPEC)),
        "--prompt",
        "24",
        "--decode",
        "6",
        "--reps",
        "1",
        "--json",
        env={"MLCX_CACHE": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kv_dtype"] == "float16" and report["compile_seconds"] > 0
    assert Artifact(report["artifact"]).config.kv_dtype == "float16"


def test_bench_is_the_default_subcommand():
    # `mlcx bench ARTIFACT` (no `run`) is what every bench call of this file runs
    explicit = run_mlcx_here("bench", "run", "--help")
    assert explicit.returncode == 0 and "--against" in explicit.stdout


def test_bench_against_a_peer_needs_a_gguf(artifact):
    result = run_mlcx_here("bench", str(artifact), "--against", "llama.cpp")
    one_line_error(result)
    assert "--gguf" in result.stderr


def test_bench_rejects_an_unknown_peer(artifact):
    result = run_mlcx_here("bench", str(artifact), "--against", "vllm")
    assert result.returncode == 2 and "vllm" in result.stderr


def test_random_model_gguf_has_the_requested_shape(tmp_path):
    from gguf import GGMLQuantizationType as GT

    from mlcx.bench.workloads.random_models import LlamaShape, write_random_gguf
    from mlcx.frontends.source import load_source

    shape = LlamaShape(hidden=128, intermediate=256, layers=2, heads=4, kv_heads=2, vocab=300)
    source = load_source(str(write_random_gguf(shape, tmp_path / "r.gguf", GT.Q4_0)))
    cfg = source.config
    got = (cfg.hidden_size, cfg.intermediate_size, cfg.num_layers, cfg.num_heads)
    assert got == (128, 256, 2, 4) and (cfg.num_kv_heads, cfg.vocab_size) == (2, 300)
    assert cfg.head_dim == 32 and cfg.rms_norm_eps == pytest.approx(1e-5)


def _random_moe(tmp_path):
    from mlcx.bench.workloads.random_models import LlamaShape, write_random_gguf

    shape = LlamaShape(
        64, 32, 2, 4, 4, 300, tie=False, arch="olmoe", experts=4, experts_used=2, qk_norm=True
    )
    return write_random_gguf(shape, tmp_path / "moe.gguf")


def test_random_moe_gguf_reads_as_a_mixture(tmp_path):
    from mlcx.frontends.source import load_source

    cfg = load_source(str(_random_moe(tmp_path))).config
    assert (cfg.num_experts, cfg.experts_per_token, cfg.expert_intermediate_size) == (4, 2, 32)


def test_random_moe_gguf_loads_in_llama_cpp(tmp_path):
    """The peer's own loader accepts the file (where `mlcx bench` has built the binding)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    llm = llama_cpp.Llama(str(_random_moe(tmp_path)), n_ctx=32, verbose=False)
    assert llm.metadata["olmoe.expert_count"] == "4" and len(llm.tokenize(b"ab")) > 0


def test_random_q4_0_blocks_are_small_random_weights():
    import numpy as np
    from gguf import GGMLQuantizationType as GT
    from gguf.quants import dequantize

    from mlcx.bench.workloads.random_models import RANDOM_MODELS, random_q4_0

    weights = dequantize(random_q4_0(np.random.default_rng(0), 64, 256), GT.Q4_0)
    assert weights.shape == (64, 256) and 0.015 < weights.std() < 0.025
    assert not RANDOM_MODELS["llama-3.1-8b-random"].tie  # an untied head, as the real one


def test_bench_profile_times_each_kernel_of_a_cpu_step(artifact):
    result = _bench(str(artifact), "--threads", "1", "--profile")
    assert result.returncode == 0, result.stderr
    prefill, decode = json.loads(result.stdout)["profile"]
    assert (prefill["step"], prefill["tokens"], decode["step"], decode["tokens"]) == (
        "prefill",
        24,
        "decode",
        1,
    )
    for step in (prefill, decode):
        calls = {k["kernel"]: k["calls"] for k in step["kernels"]}
        # one attention call per layer, as the model has layers
        assert sum(n for k, n in calls.items() if "attention" in k) == SPEC.layers, calls
        assert not [k for k in calls if k.startswith("vm.builtin")]
        assert sum(k["share"] for k in step["kernels"]) == pytest.approx(1.0)


def test_bench_target_applies_when_compiling_only(artifact):
    line = one_line_error(run_mlcx_here("bench", str(artifact), "--target", "vulkan"))
    assert "compiled for cpu" in line


def test_bench_sizes_default_by_kernel_kind():
    from mlcx.bench.run import BenchRequest

    request = BenchRequest("m", prompt_tokens=8)
    sizes = {k: request.workload(k) for k in ("cpu", "gpu")}
    assert {k: (w.prompt_tokens, w.decode_tokens) for k, w in sizes.items()} == {
        "cpu": (8, 128),
        "gpu": (8, 16),
    }
    with pytest.raises(ValueError, match="prompt tokens"):
        BenchRequest("m", prompt_tokens=0)


def test_a_run_past_the_context_window_says_so(artifact):
    window = Artifact(artifact).config.context_window
    result = run_mlcx(
        "bench", str(artifact), "--prompt", str(window), "--decode", "2", "--reps", "1", "--json"
    )
    assert result.returncode == 0, result.stderr
    notes = json.loads(result.stdout)["notes"]
    assert any(f"{window + 2} tokens pass the model's {window}-token" in n for n in notes), notes
