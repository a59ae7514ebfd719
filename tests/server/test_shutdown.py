"""`mlcx serve` under SIGTERM: stop accepting, let in-flight requests finish, then exit."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx

from tests.support.cli import mlcx_env


def start_server(artifact, *args: str) -> tuple[subprocess.Popen, str]:
    env = mlcx_env({"PYTHONUNBUFFERED": "1"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlcx.cli.main", "serve", str(artifact), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        if match := re.search(r"listening on (http://\S+)", line):
            return proc, match.group(1)
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError("mlcx serve did not start")


def refuses_connections(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
    except OSError:
        return True
    return False


def test_sigterm_drains_in_flight_requests_then_exits(artifact):
    proc, url = start_server(artifact, "--grace-period", "20", "--log-level", "warning")
    try:
        while httpx.get(f"{url}/health").status_code != 200:
            time.sleep(0.05)
        model = httpx.get(f"{url}/v1/models").json()["data"][0]["id"]
        body = {
            "model": model,
            "prompt": "hi",
            "max_tokens": 240,
            "ignore_eos": True,
            "stream": True,
            "n": 4,
        }
        events: list[str] = []
        first = threading.Event()

        def stream() -> None:
            with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=60) as r:
                for line in r.iter_lines():
                    if line:
                        events.append(line)
                        first.set()

        reader = threading.Thread(target=stream)
        reader.start()
        assert first.wait(30)
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not refuses_connections(url):
            assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
            time.sleep(0.01)
        assert events[-1] != "data: [DONE]"  # the request was still in flight
        reader.join(60)
        # uvicorn re-raises the signal once shut down, so the exit status says "SIGTERM".
        assert proc.wait(30) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    finished = [c["choices"][0] for c in chunks if c["choices"][0]["finish_reason"]]
    assert sorted(c["index"] for c in finished) == [0, 1, 2, 3]
    assert {c["finish_reason"] for c in finished} == {"length"}
