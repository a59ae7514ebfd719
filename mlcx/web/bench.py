"""`mlcx bench web`: one WebGPU-plan artifact in headless Chromium and natively through
wgpu-native on the same adapter (Chromium's SwiftShader, through its Vulkan ICD file), with the
same prompt and decode lengths, reps interleaved between the two; medians and browser/native
ratios for prefill and decode, and the demo's time to answer a chat question on each."""

from __future__ import annotations

import statistics
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.web.browser import swiftshader_icd
from mlcx.web.browser_side import BrowserSide
from mlcx.web.dawn import DawnToggles
from mlcx.web.native_side import NativeSide
from mlcx.web.timing import Answer, Sample

NATIVE_ADAPTER = "SwiftShader Device (Subzero)"
QUESTION = "What is the capital of France?"
ANSWER_TOKENS = 128  # the demo's default max tokens
FIRST_ID = 1000  # prompts are fixed ids from here on, a fresh range per run (no prefix hits)


@dataclass(frozen=True)
class BenchSpec:
    prompt_tokens: int = 64
    decode_tokens: int = 16
    reps: int = 3
    demo: bool = True  # also time the chat answer to QUESTION on both sides
    dawn: DawnToggles = DawnToggles()  # for Chromium (mlcx/web/dawn.py)

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "decode_tokens", "reps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


def prompt_ids(run: int, spec: BenchSpec, vocab: int) -> list[int]:
    start = FIRST_ID + run * spec.prompt_tokens
    return [(start + i) % vocab for i in range(spec.prompt_tokens)]


@dataclass(frozen=True)
class SideResult:
    where: str
    adapter: str
    ready_s: float  # start to model loaded (weights up, pipelines compiled)
    samples: tuple[Sample, ...]
    answer: Answer | None

    @property
    def prefill_tok_s(self) -> float:
        return statistics.median(s.prefill_tok_s for s in self.samples)

    @property
    def decode_tok_s(self) -> float:
        return statistics.median(s.decode_tok_s for s in self.samples)


@dataclass(frozen=True)
class WebBench:
    spec: BenchSpec
    native: SideResult
    browser: SideResult

    @property
    def prefill_ratio(self) -> float:
        return self.browser.prefill_tok_s / self.native.prefill_tok_s

    @property
    def decode_ratio(self) -> float:
        return self.browser.decode_tok_s / self.native.decode_tok_s


def bench_web(artifact: Path, spec: BenchSpec = BenchSpec()) -> WebBench:
    vocab = Artifact(artifact).config.model.vocab_size
    with ExitStack() as stack:
        native = NativeSide(artifact, swiftshader_icd(), NATIVE_ADAPTER)
        stack.callback(native.close)
        browser = BrowserSide(artifact, spec.dawn)
        stack.callback(browser.close)
        sides = (native, browser)
        # the demo's question first, as on a freshly loaded page; it also warms both sides up
        answers = {s.where: s.chat(QUESTION, ANSWER_TOKENS) for s in sides} if spec.demo else {}
        if not answers:
            for side in sides:
                side.run(prompt_ids(spec.reps, spec, vocab), 1)
        samples = _interleaved(sides, spec, vocab)
    return WebBench(
        spec,
        *(
            SideResult(s.where, s.adapter, s.ready_s, samples[s.where], answers.get(s.where))
            for s in sides
        ),
    )


def _interleaved(sides, spec: BenchSpec, vocab: int) -> dict[str, tuple[Sample, ...]]:
    """rep r runs on each side in turn, the order flipped every rep (drift hits both)."""
    samples: dict[str, list[Sample]] = {s.where: [] for s in sides}
    for rep in range(spec.reps):
        for side in sides if rep % 2 == 0 else sides[::-1]:
            samples[side.where].append(side.run(prompt_ids(rep, spec, vocab), spec.decode_tokens))
    return {where: tuple(runs) for where, runs in samples.items()}


def report(result: WebBench) -> list[str]:
    spec = result.spec
    lines = [
        f"prompt {spec.prompt_tokens} tokens, decode {spec.decode_tokens} tokens, "
        f"{spec.reps} interleaved reps (medians); Dawn toggles: {spec.dawn.describe()}",
        f"{'':16s} {'prefill tok/s':>14s} {'decode tok/s':>13s} {'load s':>7s}  adapter",
    ]
    for side in (result.native, result.browser):
        lines.append(
            f"{side.where:16s} {side.prefill_tok_s:14.3f} {side.decode_tok_s:13.3f} "
            f"{side.ready_s:7.1f}  {side.adapter}"
        )
    lines.append(f"{'browser/native':16s} {result.prefill_ratio:14.3f} {result.decode_ratio:13.3f}")
    for side in (result.native, result.browser):
        if side.answer:
            a = side.answer
            lines.append(
                f"{side.where} answered {QUESTION!r} in {a.seconds:.1f} s "
                f"({a.tokens} tokens, greedy): {a.text!r}"
            )
    return lines
