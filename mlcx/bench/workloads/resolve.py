"""What `mlcx bench MODEL` runs: MODEL itself when it is an artifact directory, else MODEL
compiled (timed, in a child process) for the requested target into the JIT cache
(mlcx/compile/jit.py, the one `mlcx generate` uses), with the GGUF file a peer can load when
MODEL names one."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from mlcx.artifact.config import CONFIG_FILE, Artifact
from mlcx.bench.workloads.named_models import RANDOM_MODELS, ensure_random_gguf


@dataclass(frozen=True)
class CompileChoice:
    """How the bench compiles a model that is not an artifact yet."""

    target: str
    quantization: str | None
    kv_dtype: str | None  # None: the math's
    threads: int
    tuning_db: Path | None
    linear_kernels: str | None = None  # cpu (LinearKernels' value); None: compile's default


@dataclass(frozen=True)
class Resolved:
    artifact: Path
    compile_seconds: float | None
    gguf: Path | None


def is_artifact(model: str) -> bool:
    return (Path(model) / CONFIG_FILE).is_file()


def artifact_target(model: str) -> str | None:
    """The target an artifact directory was compiled for; None when `model` is no artifact."""
    return Artifact(model).config.target if is_artifact(model) else None


def _source(model: str, say) -> tuple[str, Path | None]:
    """(what to compile, the GGUF file a peer can load if there is one)."""
    if model in RANDOM_MODELS:
        path = ensure_random_gguf(model, say)
        return str(path), path
    from mlcx.frontends.source import resolve_path

    path = resolve_path(model)
    return model, path if path.suffix == ".gguf" else None


def _timed_compile(compile_req) -> float:
    from mlcx.compile.model import compile_model

    start = time.perf_counter()
    compile_model(compile_req)
    return time.perf_counter() - start


def _request(source: str, choice: CompileChoice):
    """The compile request of `choice` (its output: the JIT cache's folder for it)."""
    from mlcx.compile.jit import artifact_dir
    from mlcx.compile.model import CompileRequest
    from mlcx.kernels.cpu.kernel_config import LinearKernels
    from mlcx.targets.base import BuildOptions

    kernels = LinearKernels(choice.linear_kernels) if choice.linear_kernels else None
    options = BuildOptions(
        num_threads=choice.threads, tuning_db=choice.tuning_db, linear_kernels=kernels
    )
    req = CompileRequest(
        source, choice.target, choice.quantization, options=options, kv_dtype=choice.kv_dtype
    )
    return replace(req, output=artifact_dir(req))


def cached_artifact(model: str, choice: CompileChoice) -> Path | None:
    """MODEL itself if it is an artifact, else its compile in the JIT cache if there."""
    if is_artifact(model):
        return Path(model)
    source = str(ensure_random_gguf(model, print)) if model in RANDOM_MODELS else model
    out = _request(source, choice).output
    return out if is_artifact(str(out)) else None


def _compile(source: str, choice: CompileChoice, say) -> tuple[Path, float]:
    """Compile in a child process, so that this process's peak memory is the run's alone."""
    compile_req = _request(source, choice)
    out = compile_req.output
    say(f"compiling {source} for {choice.target} -> {out}")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        seconds = pool.submit(_timed_compile, compile_req).result()
    return out, seconds


def resolve(model: str, gguf: Path | None, choice: CompileChoice, say) -> Resolved:
    if is_artifact(model):
        return Resolved(Path(model), None, gguf)
    source, found = _source(model, say)
    artifact, seconds = _compile(source, choice, say)
    return Resolved(artifact, seconds, gguf or found)
