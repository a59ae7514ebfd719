"""`mlcx serve --replicas` as a real process: it serves, and SIGTERM drains and stops Ray."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import httpx


def _start(artifact) -> tuple[subprocess.Popen, str, list[str]]:
    args = ["serve", str(artifact), "--replicas", "1", "--port", "0", "--log-level", "info"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlcx.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
    )
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if found := re.search(r"listening on (http://\S+)", line):
            threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
            return proc, found.group(1), lines
    raise AssertionError("the server exited: " + "".join(lines))


def _wait_ready(url: str, proc: subprocess.Popen) -> None:
    while httpx.get(f"{url}/health").status_code != 200:
        assert proc.poll() is None, "the server exited while loading"
        time.sleep(0.2)


def test_sigterm_lets_a_stream_finish_then_exits(artifact):
    proc, url, lines = _start(artifact)
    try:
        _wait_ready(url, proc)
        body = {"model": "x", "prompt": "hello", "max_tokens": 150, "stream": True}
        body["ignore_eos"] = True
        model = httpx.get(f"{url}/v1/models").json()["data"][0]["id"]
        events = []
        with httpx.stream("POST", f"{url}/v1/completions", json={**body, "model": model}) as r:
            for line in r.iter_lines():
                if not events:
                    proc.send_signal(signal.SIGTERM)
                if line.startswith("data: "):
                    events.append(line[6:])
        assert events[-1] == "[DONE]"
        assert json.loads(events[-2])["choices"][0]["finish_reason"] == "length"
        # uvicorn re-raises the signal once shut down, as `mlcx serve` does without replicas.
        assert proc.wait(timeout=120) in (0, -signal.SIGTERM), "".join(lines)
        assert any("Application shutdown complete" in line for line in lines), "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
