"""The llama.cpp peer, through llama-cpp-python (the optional `bench` extra).

llama-cpp-python compiles llama.cpp from source on install (about 16 minutes on 2 cores), so
the built wheel is kept under the mlcx cache (`<cache>/wheels`) and installed from there;
when no wheel is cached, it is built once (with pip) and cached.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mlcx.bench.peers.llamacpp_flags import cmake_args, cpu_flags
from mlcx.bench.peers.peer_setup import PeerSetup
from mlcx.bench.workloads.workload import RunTiming, Workload
from mlcx.cache import cache_dir
from mlcx.errors import MlcxError

log = logging.getLogger(__name__)

REQUIREMENT = "llama-cpp-python==0.3.36"


def wheel_dir() -> Path:
    return cache_dir() / "wheels"


def _cached_wheel() -> Path | None:
    wheels = sorted(wheel_dir().glob("llama_cpp_python-*.whl"))
    return wheels[-1] if wheels else None


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env
    )
    if result.returncode:
        tail = (result.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise MlcxError(f"pip {' '.join(args[:2])} failed: {tail}")


def ensure_llama_cpp(say=print):
    """Import llama_cpp, installing it from the cached wheel (building that first if needed)."""
    try:
        import llama_cpp

        return llama_cpp
    except ImportError:
        pass
    wheel = _cached_wheel()
    if wheel is None:
        say(f"building {REQUIREMENT} from source into {wheel_dir()} (about 16 min on 2 cores)")
        wheel_dir().mkdir(parents=True, exist_ok=True)
        # built for this CPU's extensions without AMX (mlcx.bench.peers.llamacpp_flags); pip's own
        # cache would hand back a wheel built with other flags
        env = {**os.environ, "CMAKE_ARGS": " ".join(cmake_args(cpu_flags()))}
        _pip("wheel", "--no-deps", "--no-cache-dir", REQUIREMENT, "-w", str(wheel_dir()), env=env)
        wheel = _cached_wheel()
        if wheel is None:
            raise MlcxError(f"pip built no llama-cpp-python wheel into {wheel_dir()}")
    say(f"installing {wheel.name} from the mlcx cache")
    _pip("install", str(wheel))
    import llama_cpp

    return llama_cpp


class LlamaCppEngine:
    """llama-cpp-python in process: on the CPU, or with every layer on its GPU backend (CUDA)
    when `gpu` (llama-cpp-python must then be a GPU build: see README, CUDA)."""

    command = None
    notes: tuple[str, ...] = ()

    def __init__(self, setup: PeerSetup, gpu: bool = False):
        self.name = "llama.cpp-cuda" if gpu else "llama.cpp"
        self.device = "cuda" if gpu else "cpu"
        llama_cpp = ensure_llama_cpp(setup.say)
        if gpu and not llama_cpp.llama_supports_gpu_offload():
            raise ValueError(
                "this llama-cpp-python has no GPU backend; install a CUDA build "
                "(CMAKE_ARGS=-DGGML_CUDA=on pip install llama-cpp-python)"
            )
        workload = setup.workload
        context = workload.prompt_tokens + workload.decode_tokens + 8
        cache_type = {
            "float16": llama_cpp.GGML_TYPE_F16,
            "float32": llama_cpp.GGML_TYPE_F32,
            "int8": llama_cpp.GGML_TYPE_Q8_0,  # per 32 elements where mlcx scales per row
        }
        if setup.kv_dtype not in cache_type:
            raise ValueError(
                f"llama.cpp has no {setup.kv_dtype!r} KV cache here; use float16, float32 or int8"
            )
        # As llama.cpp's own tools run by default (llama-cli, llama-server): batches of 2048
        # in micro-batches of 512, flash attention on (their "auto" on a CPU; a q8_0 V cache
        # needs it).
        self.llm = llama_cpp.Llama(
            str(setup.gguf),
            n_ctx=context,
            n_batch=min(workload.prompt_tokens, 2048),
            n_ubatch=min(workload.prompt_tokens, 512),
            n_threads=setup.threads,
            n_threads_batch=setup.threads,
            type_k=cache_type[setup.kv_dtype],
            type_v=cache_type[setup.kv_dtype],
            flash_attn=True,
            n_gpu_layers=-1 if gpu else 0,
            verbose=False,
        )
        self.vocab = self.llm.n_vocab()

    def _argmax(self) -> int:
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.vocab,))
        return int(logits.argmax())

    def warm_up(self, ids: list[int], workload: Workload) -> None:
        self.run(ids, workload)

    def run(self, ids: list[int], workload: Workload) -> RunTiming:
        self.llm.reset()
        start = time.perf_counter()
        self.llm.eval(ids)
        token = self._argmax()
        prefilled = time.perf_counter()
        for _ in range(workload.decode_tokens):
            self.llm.eval([token])
            token = self._argmax()
        return RunTiming(prefilled - start, time.perf_counter() - prefilled)
