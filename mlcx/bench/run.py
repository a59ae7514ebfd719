"""One benchmark: resolve the model, compile it (timed) unless given an artifact, then run
mlcx and its peers interleaved, rep by rep, on the same ids and thread count."""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mlcx.artifact.config import CONFIG_FILE, Artifact
from mlcx.bench.bandwidth import measure_read_bandwidth
from mlcx.bench.mlcx_engine import MlcxEngine, peak_memory_bytes, weight_bytes_per_token
from mlcx.bench.random_models import RANDOM_MODELS, ensure_random_gguf
from mlcx.bench.report import BenchReport
from mlcx.bench.workload import Speed, Workload
from mlcx.cache import cache_dir

PEERS = ("llama.cpp",)


@dataclass(frozen=True)
class BenchRequest:
    model: str  # preset, .gguf, HF folder, random model name, or an artifact directory
    workload: Workload = Workload()
    quantization: str | None = None
    against: tuple[str, ...] = ()
    gguf: Path | None = None  # the peer's model file, when `model` does not name one
    tuning_db: Path | None = None
    # KV cache dtype of both engines: f16 is llama.cpp's default; an artifact keeps its own
    kv_dtype: str = "float16"

    def __post_init__(self) -> None:
        unknown = [p for p in self.against if p not in PEERS]
        if unknown:
            raise ValueError(f"unknown peer {unknown[0]!r}; choose from {', '.join(PEERS)}")


@dataclass(frozen=True)
class _Resolved:
    artifact: Path
    compile_seconds: float | None
    gguf: Path | None


def _is_artifact(model: str) -> bool:
    return (Path(model) / CONFIG_FILE).is_file()


def _source(model: str, say) -> tuple[str, Path | None]:
    """(what to compile, the GGUF file a peer can load if there is one)."""
    if model in RANDOM_MODELS:
        path = ensure_random_gguf(model, say)
        return str(path), path
    from mlcx.frontends.source import resolve_path

    path = resolve_path(model)
    return model, path if path.suffix == ".gguf" else None


def _timed_compile(compile_req) -> float:
    from mlcx.compile import compile_model

    start = time.perf_counter()
    compile_model(compile_req)
    return time.perf_counter() - start


def _compile(source: str, req: BenchRequest, threads: int, say) -> tuple[Path, float]:
    """Compile in a child process, so that this process's peak memory is the run's alone."""
    from mlcx.compile import CompileRequest
    from mlcx.targets.base import BuildOptions

    name = f"{Path(source).name}-{req.quantization or 'auto'}-kv-{req.kv_dtype}"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name)
    out = cache_dir() / "bench" / "artifacts" / slug
    say(f"compiling {source} for cpu -> {out}")
    options = BuildOptions(num_threads=threads, tuning_db=req.tuning_db)
    compile_req = CompileRequest(
        source, "cpu", req.quantization, out, options=options, kv_dtype=req.kv_dtype
    )
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        seconds = pool.submit(_timed_compile, compile_req).result()
    return out, seconds


def _resolve(req: BenchRequest, threads: int, say) -> _Resolved:
    if _is_artifact(req.model):
        return _Resolved(Path(req.model), None, req.gguf)
    source, gguf = _source(req.model, say)
    artifact, seconds = _compile(source, req, threads, say)
    return _Resolved(artifact, seconds, req.gguf or gguf)


def _threads(req: BenchRequest) -> int:
    if req.workload.threads:
        return req.workload.threads
    if os.environ.get("TVM_NUM_THREADS"):
        return int(os.environ["TVM_NUM_THREADS"])
    if _is_artifact(req.model):
        cores = Artifact(req.model).config.tvm_target.get("num-cores")
        if cores:
            return int(cores)
    return os.cpu_count() or 1


def _peers(req: BenchRequest, resolved: _Resolved, kv_dtype: str, threads: int, say) -> list:
    if not req.against:
        return []
    from mlcx.bench.llamacpp import LlamaCppEngine

    return [LlamaCppEngine(resolved.gguf, req.workload, threads, kv_dtype, say)]


def run_bench(req: BenchRequest, say=print) -> BenchReport:
    threads = _threads(req)
    # TVM sizes its thread pool once, at the first parallel kernel of the process.
    os.environ["TVM_NUM_THREADS"] = str(threads)
    resolved = _resolve(req, threads, say)
    if req.against and resolved.gguf is None:
        raise ValueError(
            f"--against {req.against[0]} needs the model's GGUF file: pass --gguf PATH"
        )
    workload = req.workload
    say(f"measuring read bandwidth with {threads} threads")
    bandwidth = measure_read_bandwidth(threads)
    ours = MlcxEngine(resolved.artifact, workload)
    ids = workload.prompt_ids(ours.vocab)
    ours.run(ids, workload)  # warm-up: pages in the weights, spins up the thread pool
    peak = peak_memory_bytes()
    kv_dtype = ours.artifact.config.cache_dtype
    engines = [ours, *_peers(req, resolved, kv_dtype, threads, say)]
    for peer in engines[1:]:
        peer.run(ids, workload)
    runs: dict[str, list] = {e.name: [] for e in engines}
    for rep in range(workload.reps):
        say(f"rep {rep + 1}/{workload.reps}")
        for engine in engines:
            runs[engine.name].append(engine.run(ids, workload))
    return BenchReport(
        model=req.model,
        artifact=str(resolved.artifact),
        workload=workload,
        threads=threads,
        kv_dtype=kv_dtype,
        speeds={name: Speed.of(r, workload) for name, r in runs.items()},
        compile_seconds=resolved.compile_seconds,
        peak_memory_bytes=peak,
        weight_bytes_per_token=weight_bytes_per_token(ours.artifact),
        read_bandwidth=bandwidth,
    )
