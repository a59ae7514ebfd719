#!/usr/bin/env python3
"""The GPU run of issue 26, on a bare NVIDIA machine that reaches nothing outside itself
(scripts/gpu-bench.sh calls this with the machine's python3; stdlib only until installed).

1-2. Staging and install (scripts/gpu_bench_stage.py): the packed parts arrive one device call
   each under .gpu/pN; once all are here, the payload is unpacked and its wheels installed.
3. Measure, most important first, each step bounded so the whole stays inside one call:
   - the GPU's read bandwidth (PyTorch, a streaming sum), for the HBM bound on decode;
   - `mlcx bench MODEL --target cuda --against llama.cpp-cuda` (prompt 512, decode 128) for
     smollm2-135m (the default model's own GGUF), llama-3.2-1b-random, llama-3.1-8b-random;
   - greedy tokens of the default model's cuda artifact against the cpu artifact's (packed);
   - if time is left, the default model again without CUDA graphs and with mlcx's own decode
     GEMV instead of dlight's LowBatchGEMV, to see what each is worth;
   - if time is left, kernel launches per decode step of the default model (lowered module).
   - after the 1B model, WebGPU's GEMM tiles on the GPU's Vulkan (scripts/gpu_bench_tiles.py).
Prints one line per result and a summary table; writes gpu-bench.json under $OUT if set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpu_bench_clock import left, python, say  # beside this script: on sys.path
from gpu_bench_stage import install, stage, unpack
from gpu_bench_tiles import webgpu_tiles

ROOT = Path(__file__).resolve().parents[1]
CARRY = ROOT / ".gpu"
WORK = Path(os.environ.get("GPU_BENCH_WORK", "/tmp/gpu-bench"))
MODELS = ["smollm2-135m", "llama-3.2-1b-random", "llama-3.1-8b-random"]
# seconds a model's bench may take at most (compile included), and what it must leave after
STEP_LIMIT = {"smollm2-135m": 240, "llama-3.2-1b-random": 180, "llama-3.1-8b-random": 300}
RESULTS: dict = {"models": {}}


def device_info(env) -> None:
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        smi = subprocess.CompletedProcess([], 1, "no nvidia-smi", "")
    RESULTS["gpu"] = smi.stdout.strip()
    say("GPU:", RESULTS["gpu"])
    check = python(env, "import tvm; d = tvm.cuda(0); print(d.exist, d.compute_version)", 120)
    say("TVM sees CUDA:", check.stdout.strip() or check.stderr.strip().splitlines()[-1:])


def read_bandwidth() -> float | None:
    """Bytes/s a streaming sum reads on the GPU (PyTorch, 4 GiB, median of 10)."""
    code = (
        "import torch; x = torch.ones(1 << 30, device='cuda'); s = torch.cuda.Event(True); "
        "e = torch.cuda.Event(True); ts = []\n"
        "for _ in range(12):\n"
        "    s.record(); x.sum(); e.record(); torch.cuda.synchronize()\n"
        "    ts.append(s.elapsed_time(e))\n"
        "ts = sorted(ts[2:]); print(x.numel() * 4 / (ts[len(ts) // 2] / 1e3))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    try:
        return float(result.stdout.strip())
    except ValueError:
        say("bandwidth: torch failed:", result.stderr.strip().splitlines()[-1:])
        return None


def bench_argv(model: str, *options: str) -> list[str]:
    """`mlcx bench MODEL` at the issue's sizes (prompt 512, decode 128, 3 reps), as JSON."""
    sizes = ["--prompt", "512", "--decode", "128", "--reps", "3", "--json"]
    return [sys.executable, "-m", "mlcx", "bench", model, *options, *sizes]


def bench(env, model: str, peer: bool, bandwidth: float | None) -> dict | None:
    argv = bench_argv(model, "--target", "cuda")
    if peer:
        argv += ["--against", "llama.cpp-cuda"]
    limit = min(STEP_LIMIT[model], left() - 20)
    if limit < 60:
        say(f"{model}: skipped ({left():.0f} s left)")
        return None
    say(f"{model}: {' '.join(argv[1:])} (at most {limit:.0f} s)")
    try:
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        say(f"{model}: timed out after {limit:.0f} s")
        return None
    if result.returncode:
        say(f"{model}: failed:", "\n".join(result.stderr.strip().splitlines()[-8:]))
        return None
    report = json.loads(result.stdout)
    mlcx = report["speeds"]["mlcx"]
    line = {
        "prefill": mlcx["prefill"],
        "decode": mlcx["decode"],
        "compile_s": report.get("compile_seconds"),
        "artifact": report["artifact"],
        "devices": report.get("devices", {}),
        "weight_bytes_per_token": report["weight_bytes_per_token"],
        "ratios": report.get("ratios", {}),
        "peers": {k: v for k, v in report["speeds"].items() if k != "mlcx"},
    }
    if bandwidth:
        line["hbm_bound_fraction"] = mlcx["decode"] * report["weight_bytes_per_token"] / bandwidth
    say(
        f"{model}: mlcx prefill {mlcx['prefill']:.0f} tok/s, decode {mlcx['decode']:.1f} tok/s; "
        + ", ".join(
            f"{p}: prefill {r['prefill']:.2f}x decode {r['decode']:.2f}x"
            for p, r in line["ratios"].items()
        )
        + (f"; decode at {line['hbm_bound_fraction']:.0%} of the HBM bound" if bandwidth else "")
    )
    for note in report.get("notes", []):
        say(f"  note: {note}")
    return line


def greedy(env, payload: Path, artifact: str) -> None:
    expected_path = payload / "expected.json"
    if not expected_path.is_file():
        return
    expected = json.loads(expected_path.read_text())
    argv = [
        sys.executable,
        "-m",
        "mlcx",
        "generate",
        artifact,
        "-p",
        expected["prompt"],
        "--max-tokens",
        str(expected["max_tokens"]),
        "--temperature",
        "0",
        "--json",
    ]
    result = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=max(30, min(120, left() - 10))
    )
    if result.returncode:
        say("greedy: failed:", result.stderr.strip().splitlines()[-3:])
        return
    got = json.loads(result.stdout.strip().splitlines()[-1])
    want = expected["cpu"]["token_ids"]
    same = 0
    while same < min(len(want), len(got["token_ids"])) and want[same] == got["token_ids"][same]:
        same += 1
    RESULTS["greedy"] = {
        "equal": got["token_ids"] == want,
        "first_equal": same,
        "cuda": got["token_ids"],
        "cpu": want,
    }
    say(
        f"greedy tokens of the cuda artifact {'EQUAL' if got['token_ids'] == want else 'DIFFER'}"
        f" to the cpu artifact's ({same} of {len(want)} agree from the start)"
    )
    say(f"  cuda: {got['text']!r}")
    say(f"  cpu:  {expected['cpu']['text']!r}")


VARIANT = """
import sys
from pathlib import Path
from mlcx.compile.model import CompileRequest, compile_model
from mlcx.targets.base import BuildOptions
options = BuildOptions(**{k: v == "True" if v in ("True", "False") else v
                          for k, v in (a.split("=") for a in sys.argv[2:])})
compile_model(CompileRequest("smollm2-135m", "cuda", None, Path(sys.argv[1]), options=options))
"""
VARIANTS = {"no CUDA graphs": ["cuda_graphs=False"], "mlcx decode GEMV": ["decode_gemv=mlcx"]}


def variants(env) -> None:
    RESULTS["variants"] = {}
    for label, options in VARIANTS.items():
        if left() < 150:
            say(f"{label}: skipped ({left():.0f} s left)")
            continue
        out = WORK / label.replace(" ", "-")
        built = subprocess.run(
            [sys.executable, "-c", VARIANT, str(out), *options],
            env=env,
            capture_output=True,
            text=True,
            timeout=left() - 60,
        )
        if built.returncode:
            say(f"{label}: compile failed:", built.stderr.strip().splitlines()[-3:])
            continue
        argv = bench_argv(str(out))
        result = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=max(30, left() - 10)
        )
        if result.returncode:
            say(f"{label}: bench failed:", result.stderr.strip().splitlines()[-3:])
            continue
        speed = json.loads(result.stdout)["speeds"]["mlcx"]
        RESULTS["variants"][label] = speed
        say(
            f"smollm2-135m, {label}: prefill {speed['prefill']:.0f} tok/s, decode "
            f"{speed['decode']:.1f} tok/s"
        )


LAUNCHES = """
import tvm
from mlcx.compile.model import CompileRequest, export_model
from mlcx.passes.gpu.launch_count import step_launches
from mlcx.passes.pipeline_gpu import gpu_config, gpu_pipeline
from mlcx.targets.device_code import activation_dtype
from mlcx.passes.gpu.cuda_graph import graph_max_batch
ex = export_model(CompileRequest("smollm2-135m", "cuda"))
t = ex.tvm_target
for graphs in (None, graph_max_batch("cuda")):
    low = gpu_pipeline(t, activation_dtype(ex.mod), gpu_config(t), graphs)(ex.mod)
    s = step_launches(low, "decode", t)
    print(graphs, s.launches, s.cpu_launches, ex.source.config.num_layers)
"""


def launches(env) -> None:
    if left() < 90:
        say(f"launches per decode step: skipped ({left():.0f} s left)")
        return
    result = python(env, LAUNCHES, timeout=left() - 10)
    rows = [line.split() for line in result.stdout.strip().splitlines() if line]
    if result.returncode or len(rows) != 2:
        say("launches: failed:", result.stderr.strip().splitlines()[-3:])
        return
    (_, kernels, plain, layers), (_, _, graphed, _) = rows
    RESULTS["launches"] = {
        "kernels": int(kernels),
        "cpu_plain": int(plain),
        "cpu_graphs": int(graphed),
        "layers": int(layers),
    }
    say(
        f"launches per decode step (default model, {layers} layers): {kernels} kernels; the CPU "
        f"issues {plain} without CUDA graphs, {graphed} with them"
    )


def summary() -> None:
    say(
        "summary (tok/s; ratio = mlcx / llama-bench CUDA; HBM = decode vs the read-bandwidth "
        "bound on weights)"
    )
    print(f"{'model':<22}{'prefill':>10}{'decode':>10}{'x prefill':>11}{'x decode':>10}{'HBM':>7}")
    for model, r in RESULTS["models"].items():
        if r is None:
            print(f"{model:<22}{'-':>10}")
            continue
        ratio = r["ratios"].get("llama.cpp-cuda", {})
        fraction = r.get("hbm_bound_fraction")
        print(
            f"{model:<22}{r['prefill']:>10.0f}{r['decode']:>10.1f}"
            f"{ratio.get('prefill', float('nan')):>11.2f}{ratio.get('decode', float('nan')):>10.2f}"
            f"{(f'{fraction:.0%}' if fraction else '-'):>7}"
        )
    out = os.environ.get("OUT")
    if out:
        Path(out, "gpu-bench.json").write_text(json.dumps(RESULTS, indent=1))


def main() -> None:
    manifest = stage(CARRY, say)
    if manifest is None:
        return
    say("all parts here: unpacking")
    payload = unpack(manifest, CARRY, WORK)
    env, llama_bench = install(payload, ROOT)
    RESULTS["llama_bench"] = llama_bench
    device_info(env)
    bandwidth = read_bandwidth()
    RESULTS["read_bandwidth"] = bandwidth
    say(f"read bandwidth {bandwidth / 1e12:.2f} TB/s" if bandwidth else "read bandwidth unknown")
    peer = RESULTS["llama_bench"] is not None
    if not peer:
        say("llama-bench (CUDA) was not packed: mlcx runs alone")
    for model in MODELS:
        RESULTS["models"][model] = bench(env, model, peer, bandwidth)
        if model == MODELS[0] and RESULTS["models"][model]:
            greedy(env, payload, RESULTS["models"][model]["artifact"])
        if model == MODELS[1]:  # its random GGUF is made: WebGPU's prefill tiles on it
            webgpu_tiles(env, WORK, RESULTS)
    variants(env)
    launches(env)
    summary()


if __name__ == "__main__":
    main()
