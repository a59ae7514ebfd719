"""`mlcx bench` on a compiled tiny model: the report's numbers come from the real files and
the real run. Speeds themselves are never asserted (no timed tests)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlcx.runtime.artifact import Artifact
from mlcx.runtime.weight_shards import load_arrays
from tests.support.cli import one_line_error, run_mlcx
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=5)


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
    speed = report["speeds"]["mlcx"]
    assert speed["prefill"] > 0 and speed["decode"] > 0
    assert report["ratios"] == {} and report["compile_seconds"] is None
    # An untied model reads every matrix but only one embedding row per token.
    arrays = dict(load_arrays(Artifact(artifact).params_dir))
    matrices = sum(np.asarray(a).nbytes for n, a in arrays.items() if not n.startswith("embed."))
    assert report["weight_bytes_per_token"] == matrices
    bound = report["read_bandwidth"] / matrices
    assert report["decode_bound"] == pytest.approx(bound)
    assert report["decode_bound_fraction"] == pytest.approx(speed["decode"] / bound)
    assert report["peak_memory_bytes"] > 0


def test_bench_is_the_default_subcommand(artifact):
    plain, explicit = _bench(str(artifact)), run_mlcx("bench", "run", "--help")
    assert plain.returncode == 0, plain.stderr
    assert explicit.returncode == 0 and "--against" in explicit.stdout


def test_bench_against_a_peer_needs_a_gguf(artifact):
    result = run_mlcx("bench", str(artifact), "--against", "llama.cpp")
    one_line_error(result)
    assert "--gguf" in result.stderr


def test_bench_rejects_an_unknown_peer(artifact):
    result = run_mlcx("bench", str(artifact), "--against", "vllm")
    assert result.returncode == 2 and "vllm" in result.stderr
