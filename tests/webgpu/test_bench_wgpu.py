"""`mlcx bench` on a tiny WebGPU-plan artifact through the wgpu runner (lavapipe here): speeds,
the adapter, the per-kernel profile, and the llama.cpp-vulkan peer played by a stand-in
llama-bench that prints a recorded run. Speeds themselves are never asserted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mlcx.artifact.config import Artifact
from mlcx.bench.measure.mlcx_engine import GreedySequence, kv_blocks
from mlcx.bench.measure.profile import profile_steps
from mlcx.bench.peers.llamacpp_vulkan import BUILD
from mlcx.bench.workloads.workload import Workload
from mlcx.runtime.backends.wgpu_runner import WgpuRunner, load_plan
from tests.support.cli import run_mlcx
from tests.support.tiny_models import TinySpec

RECORDED = Path(__file__).parents[1] / "fixtures" / "llama_bench_vulkan_p64_n16.json"
LISTED = "llvmpipe (LLVM 15.0.6, 256 bits)"  # the recorded run's device


@pytest.fixture(scope="module")
def artifact(adapter, webgpu_artifact):
    return webgpu_artifact("q4f32")


def _timestamps(adapter) -> str:
    return "timestamp-query" if "timestamp-query" in adapter.features else "wall time per dispatch"


def test_bench_reports_speeds_the_adapter_and_a_profile_at_gpu_sizes(artifact, adapter):
    result = run_mlcx("bench", str(artifact), "--reps", "1", "--profile", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["target"] == "webgpu"
    assert (report["workload"]["prompt_tokens"], report["workload"]["decode_tokens"]) == (64, 16)
    speed = report["speeds"]["mlcx"]
    assert speed["prefill"] > 0 and speed["decode"] > 0
    assert report["devices"]["mlcx"].startswith(adapter.info["device"])
    assert report["read_bandwidth"] is None and report["decode_bound"] is None
    kernels = set(load_plan(Artifact(artifact)).kernels)
    assert [s["step"] for s in report["profile"]] == ["prefill", "decode"]
    for step in report["profile"]:
        assert step["method"] == _timestamps(adapter)
        assert step["dispatches"] == sum(k["calls"] for k in step["kernels"])
        assert {k["kernel"] for k in step["kernels"]} <= kernels
        assert sum(k["share"] for k in step["kernels"]) == pytest.approx(1.0)


def _launches(artifact_dir: Path, workload: Workload) -> dict[str, Counter]:
    """Kernel -> dispatches the executor hands to the kernel set, per step, without profiling."""
    artifact = Artifact(artifact_dir)
    blocks = kv_blocks(artifact, workload)
    runner = WgpuRunner(artifact, blocks)
    kernels = runner.executor.kernels
    submit, launched = kernels.submit, []
    kernels.submit = lambda ds: (launched.extend(d.kernel for d in ds), submit(ds))
    ids = workload.prompt_ids(artifact.config.model.vocab_size)
    sequence = GreedySequence(runner, artifact, blocks, ids)
    steps = {}
    for name, step in (("prefill", sequence.prefill), ("decode", sequence.decode)):
        launched.clear()
        step()
        steps[name] = Counter(launched)
    return steps


@pytest.mark.parametrize("timestamps", [True, False], ids=["timestamps", "wall"])
def test_profile_times_every_dispatch_the_executor_launches(artifact, adapter, timestamps):
    workload = Workload(24, 2, 1)
    launched = _launches(artifact, workload)
    steps = profile_steps(artifact, workload, timestamps)
    assert [(s.step, s.tokens) for s in steps] == [("prefill", 24), ("decode", 1)]
    for step in steps:
        assert {k.kernel: k.calls for k in step.kernels} == launched[step.step]
        assert step.dispatches == sum(launched[step.step].values())
        assert step.method == (_timestamps(adapter) if timestamps else "wall time per dispatch")
        seconds = [k.seconds for k in step.kernels]
        assert min(seconds) >= 0 and seconds == sorted(seconds, reverse=True)


def _stand_in_llama_bench(calls: Path) -> None:
    """A llama-bench where the build script puts it: lists one device, prints the recording."""
    path = BUILD.bin_dir() / "llama-bench"
    path.parent.mkdir(parents=True)
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$GGML_VK_VISIBLE_DEVICES $*" >> {calls}\n'
        'if [ "$1" = --list-devices ]; then\n'
        f"  printf 'Available devices:\\n  Vulkan0: {LISTED} (2048 MiB, 2048 MiB free)\\n'\n"
        "  exit 0\n"
        "fi\n"
        f"cat {RECORDED}\n"
    )
    path.chmod(0o755)


def test_bench_against_llama_cpp_vulkan_runs_llama_bench_once_per_rep(
    artifact, tmp_path, monkeypatch
):
    monkeypatch.setenv("MLCX_CACHE", str(tmp_path / "cache"))  # for run_mlcx too
    calls = tmp_path / "calls.log"
    _stand_in_llama_bench(calls)
    gguf = tmp_path / "model.gguf"
    args = ["--against", "llama.cpp-vulkan", "--gguf", str(gguf), "--reps", "2", "--json"]
    result = run_mlcx("bench", str(artifact), *args)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    peer = report["speeds"]["llama.cpp-vulkan"]
    assert peer["prefill"] == pytest.approx(4.508225, rel=1e-6)
    assert peer["decode"] == pytest.approx(1.374797, rel=1e-6)
    assert set(report["ratios"]["llama.cpp-vulkan"]) == {"prefill", "decode"}
    assert report["devices"]["llama.cpp-vulkan"] == LISTED
    command = report["commands"]["llama.cpp-vulkan"]
    assert command.startswith("GGML_VK_VISIBLE_DEVICES=") and str(gguf) in command
    assert "-ngl 99" in command and "-p 64 -n 16 -r 1" in command and command.endswith("-o json")
    notes = " ".join(report["notes"])
    assert "empty context" in notes and "f16 KV cache" in notes  # q4f32: mlcx's cache is f32
    # One listing, then one llama-bench process per rep with the reported command line.
    variable, _binary, arguments = command.split(" ", 2)
    ran = calls.read_text().splitlines()
    assert ran[0].endswith("--list-devices") and len(ran) == 3
    assert ran[1:] == [f"{variable.split('=')[1]} {arguments}"] * 2


def test_bench_compiles_for_vulkan_with_the_math_s_kv_cache(adapter, tiny_model, tmp_path):
    result = run_mlcx(
        "bench",
        str(tiny_model(TinySpec())),
        *("--target", "vulkan", "-q", "q4f32", "--prompt", "16", "--decode", "2"),
        *("--reps", "1", "--json"),
        env={"MLCX_CACHE": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["target"] == "vulkan" and report["compile_seconds"] > 0
    assert report["kv_dtype"] == "float32" and report["devices"]["mlcx"].endswith("(Vulkan)")
    assert Artifact(report["artifact"]).config.target == "vulkan"
