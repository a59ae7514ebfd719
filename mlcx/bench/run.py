"""One benchmark: resolve the model, compile it (timed) for the target unless given an artifact,
then run mlcx and its peers interleaved, rep by rep, on the same ids and thread count; with
`profile`, time one prefill and one decode step kernel by kernel afterwards."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.artifact.kv_budget import kv_budget, state_bytes_per_sequence
from mlcx.bench.measure.bandwidth import measure_read_bandwidth
from mlcx.bench.measure.mlcx_engine import (
    MlcxEngine,
    expert_notes,
    peak_memory_bytes,
    weight_bytes_per_token,
)
from mlcx.bench.measure.profile import check_profilable, profile_steps
from mlcx.bench.measure.residency import residency
from mlcx.bench.peers.peer_setup import PeerSetup
from mlcx.bench.peers.peers import PEERS
from mlcx.bench.report import BenchReport
from mlcx.bench.workloads.resolve import CompileChoice, Resolved, artifact_target, resolve
from mlcx.bench.workloads.workload import DEFAULT_SIZES, Speed, Workload
from mlcx.runtime.backends.registry import RUNNERS
from mlcx.targets.registry import TARGETS


@dataclass(frozen=True)
class BenchRequest:
    model: str  # preset, .gguf, HF folder, random model name, or an artifact directory
    target: str | None = None  # when compiling (None: cpu); an artifact keeps its own
    prompt_tokens: int | None = None  # None: DEFAULT_SIZES of the target's kernel kind
    decode_tokens: int | None = None
    reps: int = 3
    threads: int | None = None
    quantization: str | None = None
    against: tuple[str, ...] = ()
    gguf: Path | None = None  # the peer's model file, when `model` does not name one
    tuning_db: Path | None = None
    kv_dtype: str | None = None  # when compiling; None: compile's default (kv_layout)
    linear_kernels: str | None = None  # when compiling for cpu; None: compile's default
    profile: bool = False  # also time one prefill and one decode step per kernel
    build_peer: bool = False  # build a missing peer that takes long to build

    def __post_init__(self) -> None:
        unknown = [p for p in self.against if p not in PEERS]
        if unknown:
            raise ValueError(f"unknown peer {unknown[0]!r}; choose from {', '.join(PEERS)}")
        if self.target is not None and self.target not in TARGETS:
            raise ValueError(f"unknown target {self.target!r}; choose from {', '.join(TARGETS)}")
        if self.target is not None and TARGETS[self.target].runtime not in RUNNERS:
            raise ValueError(f"{self.target} artifacts run in an app; mlcx bench cannot run them")
        self.workload("cpu")  # validates the sizes

    def workload(self, kernel_kind: str) -> Workload:
        prompt, decode = DEFAULT_SIZES[kernel_kind]
        if self.prompt_tokens is not None:
            prompt = self.prompt_tokens
        if self.decode_tokens is not None:
            decode = self.decode_tokens
        return Workload(prompt, decode, self.reps, self.threads)


def _target(req: BenchRequest) -> str:
    compiled_for = artifact_target(req.model)
    if compiled_for and req.target and req.target != compiled_for:
        raise ValueError(
            f"{req.model} is compiled for {compiled_for}; --target applies when compiling a model"
        )
    return compiled_for or req.target or "cpu"


def _threads(req: BenchRequest) -> int:
    if req.threads:
        return req.threads
    if os.environ.get("TVM_NUM_THREADS"):
        return int(os.environ["TVM_NUM_THREADS"])
    if artifact_target(req.model):
        cores = Artifact(req.model).config.tvm_target.get("num-cores")
        if cores:
            return int(cores)
    return os.cpu_count() or 1


@dataclass(frozen=True)
class _Measured:
    speeds: dict[str, Speed]
    devices: dict[str, str]
    commands: dict[str, str]
    notes: tuple[str, ...]
    peak_memory_bytes: int
    weight_bytes_per_token: int
    kv_bytes_per_token: int
    state_bytes_per_sequence: int
    kv_dtype: str
    read_bandwidth: float | None  # median of the reps' probes


@dataclass(frozen=True)
class _Seen:
    """What the report keeps of an engine once it is freed."""

    name: str
    device: str
    command: str | None
    notes: tuple[str, ...]

    @staticmethod
    def of(engine) -> _Seen:
        return _Seen(engine.name, engine.device, engine.command, tuple(engine.notes))


def _reps(engines, *, ids, workload: Workload, say, probe, runs: dict, bandwidths: list) -> None:
    for rep in range(workload.reps):
        names = "" if len(engines) > 1 else f" ({engines[0].name})"
        say(f"rep {rep + 1}/{workload.reps}{names}")
        if probe is not None:
            bandwidths.append(probe())
        for engine in engines:
            runs.setdefault(engine.name, []).append(engine.run(ids, workload))


def _run_engines(ours: MlcxEngine, peers: list, ids, workload: Workload, say, probe, apart: bool):
    """(runs per engine name, what each engine was, bandwidth probes). `peers` make the peer
    engines; `apart`: each engine runs all its reps and is freed before the next loads."""
    runs: dict[str, list] = {}
    bandwidths: list[float] = []
    reps = functools.partial(
        _reps, ids=ids, workload=workload, say=say, probe=probe, runs=runs, bandwidths=bandwidths
    )
    engines, seen = [ours], []
    if apart:
        reps([ours])
        seen, engines = [_Seen.of(ours)], []
        ours.close()
    warm = workload.warm_up()
    for make in peers:
        peer = make()
        peer.warm_up(ids[: warm.prompt_tokens], warm)
        engines.append(peer)
        if apart:
            reps([peer])
            seen.append(_Seen.of(engines.pop()))
            del peer  # its model freed before the next loads
    if engines:
        reps(engines)
    return runs, seen + [_Seen.of(e) for e in engines], bandwidths


def _measure(req: BenchRequest, resolved: Resolved, workload: Workload, threads: int, say, probe):
    """Every engine warmed up, then run rep by rep in turn; their runners are gone on return.
    The peak memory is mlcx's alone: taken before an in-process peer loads its model.
    `probe` (cpu kernels) measures the host's read bandwidth before each rep: on a shared host
    it moves by 2x within minutes, so the bound is taken where the runs are. On the CPU, when
    mlcx's weights and the peer's file do not fit in memory together (measure/residency), the
    engines run one after the other, each freed before the next loads."""
    fit = None
    if probe is not None and req.against:
        fit = residency(Artifact(resolved.artifact).params_dir, resolved.gguf)
    apart = fit is not None and not fit.together
    if apart:
        say(fit.note(req.against))
    ours = MlcxEngine(resolved.artifact, workload)
    ids = workload.prompt_ids(ours.vocab)
    ours.warm_up(ids, workload)  # the whole run: its peak memory is then the run's
    peak = peak_memory_bytes()
    artifact, kv_dtype = ours.artifact, ours.artifact.config.cache_dtype
    setup = PeerSetup(resolved.gguf, workload, threads, kv_dtype, ours.device, req.build_peer, say)
    peers = [functools.partial(PEERS[name], setup) for name in req.against]
    runs, done, bandwidths = _run_engines(ours, peers, ids, workload, say, probe, apart)
    weights = weight_bytes_per_token(artifact)
    return _Measured(
        speeds={name: Speed.of(r, workload) for name, r in runs.items()},
        devices={e.name: e.device for e in done},
        commands={e.name: e.command for e in done if e.command},
        notes=(
            *expert_notes(artifact, weights),
            *(note for e in done for note in e.notes),
            *([fit.note(req.against)] if apart else []),
        ),
        peak_memory_bytes=peak,
        weight_bytes_per_token=weights,
        kv_bytes_per_token=kv_budget(artifact.config).bytes_per_token,
        state_bytes_per_sequence=state_bytes_per_sequence(artifact.config),
        kv_dtype=kv_dtype,
        read_bandwidth=float(np.median(bandwidths)) if bandwidths else None,
    )


def _window_notes(artifact: Path, workload: Workload) -> list[str]:
    window = Artifact(artifact).config.context_window
    tokens = workload.prompt_tokens + workload.decode_tokens
    if tokens <= window:
        return []
    return [
        f"the run's {tokens} tokens pass the model's {window}-token context window: the "
        "speeds hold, the tokens past it mean nothing (generate and serve refuse such prompts)"
    ]


def run_bench(req: BenchRequest, say=print) -> BenchReport:
    target = _target(req)
    kind = TARGETS[target].kernel_kind
    if req.profile:
        check_profilable(target)
    workload = req.workload(kind)
    threads = _threads(req)
    # TVM sizes its thread pool once, at the first parallel kernel of the process.
    os.environ["TVM_NUM_THREADS"] = str(threads)
    choice = CompileChoice(
        target, req.quantization, req.kv_dtype, threads, req.tuning_db, req.linear_kernels
    )
    resolved = resolve(req.model, req.gguf, choice, say)
    if req.against and resolved.gguf is None:
        raise ValueError(
            f"--against {req.against[0]} needs the model's GGUF file: pass --gguf PATH"
        )
    probe = None
    if kind == "cpu":  # the host's memory bounds decode only where the kernels run on it
        probe = functools.partial(measure_read_bandwidth, threads)
    measured = _measure(req, resolved, workload, threads, say, probe)
    profile = ()
    if req.profile:
        say("profiling one prefill and one decode step, kernel by kernel")
        profile = profile_steps(resolved.artifact, workload)
    return BenchReport(
        model=req.model,
        artifact=str(resolved.artifact),
        target=target,
        workload=workload,
        threads=threads,
        kv_dtype=measured.kv_dtype,
        speeds=measured.speeds,
        devices=measured.devices,
        commands=measured.commands,
        compile_seconds=resolved.compile_seconds,
        peak_memory_bytes=measured.peak_memory_bytes,
        weight_bytes_per_token=measured.weight_bytes_per_token,
        kv_bytes_per_token=measured.kv_bytes_per_token,
        read_bandwidth=measured.read_bandwidth,
        profile=profile,
        notes=[*_window_notes(resolved.artifact, workload), *measured.notes],
        state_bytes_per_sequence=measured.state_bytes_per_sequence,
    )
