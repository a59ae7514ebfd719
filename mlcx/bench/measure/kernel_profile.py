"""Per-kernel times of one step, as `mlcx bench --profile` reports them for every runtime."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass

from mlcx.bench.measure.mlcx_engine import GreedySequence


@dataclass(frozen=True)
class KernelTime:
    kernel: str
    calls: int
    seconds: float


@dataclass(frozen=True)
class StepProfile:
    step: str  # "prefill" or "decode"
    tokens: int  # fed to the step
    method: str  # how dispatches were timed (gpu_timing.TIMERS)
    dispatches: int
    kernels: tuple[KernelTime, ...]  # slowest first

    @property
    def seconds(self) -> float:
        return sum(k.seconds for k in self.kernels)

    @staticmethod
    def of(step: str, tokens: int, method: str, samples: list[tuple[str, float]]) -> StepProfile:
        calls: dict[str, int] = defaultdict(int)
        seconds: dict[str, float] = defaultdict(float)
        for kernel, s in samples:
            calls[kernel] += 1
            seconds[kernel] += s
        kernels = sorted(
            (KernelTime(k, calls[k], seconds[k]) for k in calls), key=lambda k: -k.seconds
        )
        return StepProfile(step, tokens, method, len(samples), tuple(kernels))

    def to_dict(self) -> dict:
        data = asdict(self)
        total = self.seconds or 1.0
        for kernel in data["kernels"]:
            kernel["share"] = kernel["seconds"] / total
        data["seconds"] = self.seconds
        return data

    def lines(self) -> list[str]:
        width = max([len("kernel"), *(len(k.kernel) for k in self.kernels)])
        total = self.seconds or 1.0
        out = [
            f"{self.step} of {self.tokens} token(s): {self.dispatches} dispatches, "
            f"{self.seconds * 1e3:.2f} ms in kernels ({self.method})",
            f"  {'kernel':<{width}}  {'calls':>6}  {'total ms':>10}  {'share':>6}",
        ]
        for k in self.kernels:
            ms, share = k.seconds * 1e3, k.seconds / total
            out.append(f"  {k.kernel:<{width}}  {k.calls:>6}  {ms:>10.3f}  {share:>6.1%}")
        return out


Samples = list[tuple[str, float]]  # (kernel, seconds) of each call, in order


def profile_two_steps(
    runner,
    artifact,
    blocks: int,
    ids: list[int],
    timed: Callable[[], AbstractContextManager[Samples]],
    method: str,
) -> tuple[StepProfile, ...]:
    """One prefill of `ids` and one decode step after it, each inside `timed()`, whose list
    the step's kernel calls land in; a first sequence warms up (pages in weights, starts
    threads, lets drivers compile pipelines)."""
    warm = GreedySequence(runner, artifact, blocks, ids)
    warm.prefill()
    warm.decode()
    sequence = GreedySequence(runner, artifact, blocks, ids)
    steps = []
    for name, step, tokens in (
        ("prefill", sequence.prefill, len(ids)),
        ("decode", sequence.decode, 1),
    ):
        with timed() as samples:
            step()
        steps.append(StepProfile.of(name, tokens, method, samples))
    return tuple(steps)
