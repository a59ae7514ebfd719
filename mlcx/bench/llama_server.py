"""The serving peer: llama.cpp's own OpenAI-compatible `llama-server`, on the CPU.

The binary comes from scripts/build-llamacpp-cpu.sh (the llama.cpp that llama-cpp-python's
sdist vendors, built for this CPU), cached under `<cache>/peers/`; mlcx runs the script only
when asked to (`--build-peer`). The server is started on the GGUF mlcx serves, with the same
threads and as many slots as mlcx's batch, and stopped after the load.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from mlcx.bench.serving_setup import ServingSetup
from mlcx.cache import cache_dir
from mlcx.errors import MlcxError, ToolchainError

VERSION = "0.3.36"  # of llama-cpp-python, whose sdist the script builds
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build-llamacpp-cpu.sh"
BUILD_TIME = "15-25 min on 2 cores"


def bin_dir() -> Path:
    return cache_dir() / "peers" / f"llama.cpp-cpu-{VERSION}" / "bin"


def build_peer(say) -> Path:
    """Run the build script (its output goes to a log file); the folder of the binaries."""
    if not SCRIPT.is_file():
        raise ToolchainError(
            f"{SCRIPT.name} is not next to this mlcx; run it from an mlcx source checkout"
        )
    log = cache_dir() / "peers" / "build-llamacpp-cpu.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"building llama.cpp for this CPU ({BUILD_TIME}); log: {log}")
    env = {**os.environ, "MLCX_CACHE": str(cache_dir()), "LLAMA_CPP_PYTHON_VERSION": VERSION}
    with log.open("w") as out:
        result = subprocess.run(["bash", str(SCRIPT)], stdout=subprocess.PIPE, stderr=out, env=env)
    if result.returncode:
        tail = (log.read_text().strip().splitlines() or ["no output"])[-1]
        raise ToolchainError(
            f"building llama.cpp-cpu failed (exit {result.returncode}): {tail}; see {log}"
        )
    return Path(result.stdout.decode().strip().splitlines()[-1])


def ensure_llama_server(build: bool, say) -> Path:
    path = bin_dir() / "llama-server"
    if not os.access(path, os.X_OK):
        if not build:
            raise ToolchainError(
                f"llama-server is not built ({path} is missing): pass --build-peer to build it "
                f"now ({BUILD_TIME}), or run scripts/build-llamacpp-cpu.sh"
            )
        path = build_peer(say) / "llama-server"
    return path


def server_argv(binary: Path, setup: ServingSetup, port: int) -> list[str]:
    """llama-server on the same GGUF: `threads` for decode and prompt, `slots` parallel
    sequences sharing one context of `ctx_per_slot` tokens each (llama-server splits -c)."""
    threads = str(setup.threads)
    argv = [str(binary), "-m", str(setup.gguf), "-t", threads, "-tb", threads]
    argv += ["-np", str(setup.slots), "-c", str(setup.ctx_per_slot * setup.slots)]
    # Repacked weights go to ggml's AMX kernels when the CPU lists AMX (GGML_NATIVE); on VMs
    # that list AMX without granting its tile state they die at the first matmul (SIGSEGV at
    # ldtilecfg, seen here on Sapphire Rapids), so the peer runs its plain AVX-512 kernels.
    argv.append("--no-repack")
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
