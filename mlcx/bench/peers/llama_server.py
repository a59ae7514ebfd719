"""The serving peer: llama.cpp's own OpenAI-compatible `llama-server`, on the CPU.

The binary comes from scripts/build-llamacpp-cpu.sh (the llama.cpp that llama-cpp-python's
sdist vendors, built for this CPU), cached under `<cache>/peers/`; mlcx runs the script only
when asked to (`--build-peer`). The server is started on the GGUF mlcx serves, with the same
threads and as many slots as mlcx's batch, and stopped after the load.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from mlcx.bench.peers.llamacpp_build import LlamaCppBuild
from mlcx.bench.peers.serving_setup import ServingSetup
from mlcx.errors import MlcxError

BUILD = LlamaCppBuild("cpu", "llama.cpp for this CPU", "15-25 min on 2 cores")


def ensure_llama_server(build: bool, say) -> Path:
    return BUILD.ensure("llama-server", build, say)


def server_argv(binary: Path, setup: ServingSetup, port: int) -> list[str]:
    """llama-server on the same GGUF: `threads` for decode and prompt, `max_batch` parallel
    sequences (slots) sharing one context of `ctx_per_seq` tokens each (llama-server splits -c)."""
    threads = str(setup.threads)
    argv = [str(binary), "-m", str(setup.gguf), "-t", threads, "-tb", threads]
    argv += ["-np", str(setup.max_batch), "-c", str(setup.ctx_per_seq * setup.max_batch)]
    # repacked weights stay on: the build leaves out the AMX kernels that die on some VMs
    # (mlcx.bench.peers.llamacpp_flags)
    return argv + ["--host", "127.0.0.1", "--port", str(port)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, timeout_s: float) -> None:
    """Until GET /health answers 200 (llama-server says 503 while it loads the model)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise MlcxError(f"llama-server exited with {process.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise MlcxError(f"llama-server was not healthy within {timeout_s:.0f} s")


class LlamaServer:
    name = "llama-server"

    def __init__(self, setup: ServingSetup):
        self.setup = setup
        self.binary = ensure_llama_server(setup.build, setup.say)
        self.command = shlex.join(server_argv(self.binary, setup, 0)).replace(
            "--port 0", "--port P"
        )

    @contextmanager
    def running(self, timeout_s: float = 120.0) -> Iterator[str]:
        """The base URL of a started, healthy server; stopped (SIGTERM, then SIGKILL) after."""
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(
            server_argv(self.binary, self.setup, port),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_healthy(url, process, timeout_s)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
