"""WebGPU's prefill GEMM tile on a real GPU, for scripts/gpu_bench_device.py (issue 39).

WebGPU's GEMM thread tile went from 8x8 to 4x8 (`GEMM_TOKENS` in mlcx/kernels/gpu/config.py:
fewer registers a thread, and SwiftShader, where the suite's browser tests run, builds its
pipelines in 0.4x the time). Whether that costs a real GPU prefill speed is measured here: the
same random-weight model compiled for WebGPU with each tile and run natively by wgpu-native on
the GPU's Vulkan driver, `mlcx bench` at a 512-token prompt.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpu_bench_clock import left, say

# label -> tokens of a GEMM thread's tile (its 8 rows and the workgroup's 8 groups stay)
TILES = {"8x8 (before)": 8, "4x8 (now)": 4}
MODEL = "llama-3.2-1b-random"
SIZES = ["--prompt", "512", "--decode", "32", "--reps", "3", "--json"]

# Compiles MODEL for webgpu with the tile's tokens (gpu_config() reads GEMM_TOKENS per target).
COMPILE = """
import sys
from pathlib import Path
from mlcx.bench.workloads.named_models import ensure_random_gguf
from mlcx.compile.model import CompileRequest, compile_model
from mlcx.kernels.gpu import config
config.GEMM_TOKENS["webgpu"] = int(sys.argv[3])
source = str(ensure_random_gguf(sys.argv[1], print))
compile_model(CompileRequest(source, "webgpu", None, Path(sys.argv[2])))
"""


def _run(label: str, what: str, argv: list[str], env, spare: float) -> str | None:
    """stdout of `argv` bounded by the time left less `spare`, or None (after saying why)."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=left() - spare)
    except subprocess.TimeoutExpired:
        say(f"webgpu {label}: {what} timed out")
        return None
    if done.returncode:
        say(f"webgpu {label}: {what} failed:", done.stderr.strip().splitlines()[-3:])
        return None
    return done.stdout


def webgpu_tiles(env, work: Path, results: dict, model: str = MODEL) -> None:
    results["webgpu_tiles"] = {}
    for label, tokens in TILES.items():
        if left() < 100:
            say(f"webgpu {label}: skipped ({left():.0f} s left)")
            continue
        out = work / f"webgpu-{tokens}x8"
        argv = [sys.executable, "-c", COMPILE, model, str(out), str(tokens)]
        if _run(label, "compile", argv, env, 60) is None:
            return
        bench = [sys.executable, "-m", "mlcx", "bench", str(out), *SIZES]
        if (stdout := _run(label, "bench", bench, env, 20)) is None:
            return
        report = json.loads(stdout)
        speed = report["speeds"]["mlcx"]
        device = report.get("devices", {}).get("mlcx")
        results["webgpu_tiles"][label] = {**speed, "device": device}
        say(
            f"webgpu {model}, {label}: prefill {speed['prefill']:.0f} tok/s, decode "
            f"{speed['decode']:.1f} tok/s on {device}"
        )
