"""The time budget of one device call for scripts/gpu_bench_device.py (stdlib only): every
step asks `left()` before it starts and bounds its subprocesses by it, so the run ends inside
the call's 600 s with its results printed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

START = time.monotonic()
BUDGET = float(os.environ.get("GPU_BENCH_BUDGET", "570"))  # seconds, of the 600 a call has


def say(*parts) -> None:
    print(f"[{time.monotonic() - START:6.1f}s]", *parts, flush=True)


def left() -> float:
    return BUDGET - (time.monotonic() - START)


def python(env, code: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
    )
