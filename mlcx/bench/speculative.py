"""`mlcx bench speculative`: decode speed with and without speculative decoding, in the same
run, on the echo workload (echo_workload.py), greedy, through the whole engine (scheduler,
sampler, detokenizer), at one stream and at many (where speculation turns itself off).

Decode tok/s of a run: the tokens after each stream's first, over the time from the first
token of the batch to the last; runs alternate plain / speculative, rep by rep, and speeds are
medians. Greedy outputs must be equal (the run fails if not)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

from mlcx.artifact.config import Artifact
from mlcx.bench.workloads.echo_workload import echo_messages
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.speculative.config import DEFAULT_NUM_SPECULATIVE, SpeculativeConfig

MAX_TOKENS = 400  # the default model's echo answer ends (EOS) well before


@dataclass(frozen=True)
class SpecRun:
    streams: int
    plain_tok_s: float
    spec_tok_s: float
    proposed: int
    accepted: int
    off_steps: int
    output_tokens: int  # per rep, all streams

    @property
    def speedup(self) -> float:
        return self.spec_tok_s / self.plain_tok_s

    @property
    def acceptance(self) -> float:
        return self.accepted / self.proposed if self.proposed else 0.0


@dataclass(frozen=True)
class SpecBenchReport:
    artifact: str
    speculative: str
    draft: str | None
    num_speculative: int
    prompt_tokens: int
    runs: list[SpecRun] = field(default_factory=list)

    def lines(self) -> list[str]:
        head = f"speculative={self.speculative} num_speculative={self.num_speculative}"
        out = [
            f"artifact: {self.artifact}",
            f"{head}" + (f" draft={self.draft}" if self.draft else ""),
            f"echo workload: {self.prompt_tokens} prompt tokens, greedy",
            f"{'streams':>7} {'plain tok/s':>12} {'spec tok/s':>11} {'speedup':>8} "
            f"{'accepted/proposed':>18} {'rate':>6} {'off steps':>9}",
        ]
        for r in self.runs:
            out.append(
                f"{r.streams:>7} {r.plain_tok_s:>12.1f} {r.spec_tok_s:>11.1f} "
                f"{r.speedup:>7.2f}x {f'{r.accepted}/{r.proposed}':>18} "
                f"{r.acceptance:>6.1%} {r.off_steps:>9}"
            )
        return out


def _decode_run(
    llm: LLM, prompt: list[int], streams: int, max_tokens: int
) -> tuple[float, list[list[int]]]:
    """(decode tok/s, each stream's tokens) of one batch of `streams` equal requests."""
    params = SamplingParams.greedy(max_tokens=max_tokens)
    engine = llm.engine
    for i in range(streams):
        engine.add_request(f"bench-{i}", prompt, params)
    tokens: dict[str, list[int]] = {f"bench-{i}": [] for i in range(streams)}
    first = last = None
    while engine.has_work():
        deltas = engine.step()
        now = time.perf_counter()
        for delta in deltas:
            if delta.token_ids and first is None:
                first = now
            tokens[delta.request_id].extend(delta.token_ids)
        if deltas:
            last = now
    decoded = sum(len(t) - 1 for t in tokens.values())
    return decoded / (last - first), [tokens[f"bench-{i}"] for i in range(streams)]


def _streams_run(
    plain: LLM, spec: LLM, prompt: list[int], streams: int, reps: int, max_tokens: int, say
) -> SpecRun:
    speeds: dict[str, list[float]] = {"plain": [], "spec": []}
    _decode_run(plain, prompt, streams, max_tokens)  # warm up both
    _decode_run(spec, prompt, streams, max_tokens)
    before = spec.engine.stats()
    for rep in range(reps):
        say(f"{streams} stream(s): rep {rep + 1}/{reps}")
        speed, want = _decode_run(plain, prompt, streams, max_tokens)
        speeds["plain"].append(speed)
        speed, got = _decode_run(spec, prompt, streams, max_tokens)
        speeds["spec"].append(speed)
        if got != want:
            raise RuntimeError("speculative greedy output differs from plain decoding")
    after = spec.engine.stats()
    return SpecRun(
        streams,
        statistics.median(speeds["plain"]),
        statistics.median(speeds["spec"]),
        after.spec_proposed_tokens - before.spec_proposed_tokens,
        after.spec_accepted_tokens - before.spec_accepted_tokens,
        after.spec_off_steps - before.spec_off_steps,
        sum(len(t) for t in want),
    )


def run_spec_bench(
    artifact: Artifact,
    speculative: str,
    draft: str | None,
    num_speculative: int,
    streams: tuple[int, ...],
    reps: int,
    max_tokens: int = MAX_TOKENS,
    say=print,
    max_batch: int | None = None,
) -> SpecBenchReport:
    """`max_batch`: of both engines (None: the most streams)."""
    config = EngineConfig(max_batch=max_batch or max(streams))
    spec = SpeculativeConfig(speculative, num_speculative, draft)
    spec_config = EngineConfig(max_batch=config.max_batch, speculative=spec)
    plain, spec = LLM(artifact, config), LLM(artifact, spec_config)
    prompt = plain.chat_prompt(echo_messages())
    runs = [_streams_run(plain, spec, prompt, n, reps, max_tokens, say) for n in streams]
    return SpecBenchReport(
        str(artifact.path), speculative, draft, num_speculative, len(prompt), runs
    )


@dataclass(frozen=True)
class SpecBenchRequest:
    model: str  # artifact, preset, .gguf, HF folder or random model (compiled as `mlcx bench`)
    speculative: str
    draft: str | None = None  # artifact or model to compile
    draft_blocks: tuple[int, int] | None = None  # (first, last) blocks of MODEL's GGUF
    num_speculative: int = DEFAULT_NUM_SPECULATIVE
    streams: tuple[int, ...] = (1, 16)
    reps: int = 3
    kv_dtype: str | None = "float16"
    threads: int | None = None
    max_tokens: int = MAX_TOKENS
    max_batch: int | None = None  # None: the most streams

    def __post_init__(self) -> None:
        if self.speculative == "draft" and (self.draft is None) == (self.draft_blocks is None):
            raise ValueError("--speculative draft needs --draft MODEL or --draft-blocks N")
        if self.speculative != "draft" and (self.draft or self.draft_blocks):
            raise ValueError("--draft and --draft-blocks go with --speculative draft")
        if not self.streams or min(self.streams) < 1 or min(self.reps, self.max_tokens) < 1:
            raise ValueError("--concurrency, --reps and --max-tokens must be positive")


def run_spec_request(req: SpecBenchRequest, say=print) -> SpecBenchReport:
    import os

    from mlcx.bench.workloads.resolve import CompileChoice
    from mlcx.bench.workloads.truncated_gguf import ensure_truncated_gguf

    threads = req.threads or os.cpu_count() or 1
    os.environ.setdefault("TVM_NUM_THREADS", str(threads))
    choice = CompileChoice("cpu", None, req.kv_dtype, threads, None)
    target = _resolved(req.model, choice, say)
    draft = None
    if req.draft_blocks is not None:
        if target.gguf is None:
            raise ValueError("--draft-blocks cuts MODEL's GGUF file: give a GGUF model")
        cut = ensure_truncated_gguf(target.gguf, *req.draft_blocks, say=say)
        draft = str(_resolved(str(cut), choice, say).artifact)
    elif req.draft is not None:
        draft = str(_resolved(req.draft, choice, say).artifact)
    return run_spec_bench(
        Artifact(target.artifact),
        req.speculative,
        draft,
        req.num_speculative,
        req.streams,
        req.reps,
        req.max_tokens,
        say,
        req.max_batch,
    )


def _resolved(model: str, choice, say):
    """`mlcx bench`'s compile of MODEL, reused when the bench cache has it already (the
    compile time is `mlcx bench`'s to report, not this one's)."""
    from mlcx.bench.workloads.resolve import Resolved, _source, cached_artifact, resolve

    cached = cached_artifact(model, choice)
    if cached is not None:
        return Resolved(cached, None, _source(model, say)[1])
    return resolve(model, None, choice, say)
