"""Decode speed of one WebGPU-plan artifact natively (wgpu-native) and in headless Chromium,
measured back to back on the same prompt: the browser/native ratio."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from mlcx.runtime.engine_config import EngineConfig
from mlcx.runtime.llm import LLM
from mlcx.runtime.sampling_params import SamplingParams
from mlcx.web.browser import browser_page, wait_ready
from mlcx.web.server import serve_in_background, url_of

PROMPT = "The history of the Roman Empire is"
KV_BLOCKS = 64


@dataclass(frozen=True)
class Speed:
    where: str
    adapter: str
    decode_tokens: int
    tok_per_s: float


@dataclass(frozen=True)
class WebBench:
    native: Speed
    browser: Speed

    def __post_init__(self) -> None:
        if self.native.tok_per_s <= 0:
            raise ValueError("the native run produced no decode steps")

    @property
    def ratio(self) -> float:
        """browser tok/s over native tok/s."""
        return self.browser.tok_per_s / self.native.tok_per_s


def native_speed(artifact: Path, decode_tokens: int, prompt: str = PROMPT) -> Speed:
    llm = LLM(str(artifact), EngineConfig(kv_blocks=KV_BLOCKS, max_running=1))
    params = SamplingParams.greedy(max_tokens=decode_tokens + 1, ignore_eos=True)
    stamps = [time.perf_counter() for _ in llm.stream(prompt, params)]
    steps = len(stamps) - 1  # the first token comes from prefill
    adapter = llm.engine.runner.gpu.adapter_name
    return Speed("native", adapter, steps, steps / (stamps[-1] - stamps[0]))


def browser_speed(artifact: Path, decode_tokens: int, prompt: str = PROMPT) -> Speed:
    server = serve_in_background(artifact)
    try:
        with browser_page(url_of(server) + f"?kv_blocks={KV_BLOCKS}") as page:
            wait_ready(page)
            out = page.evaluate("([n, p]) => window.mlcx.bench(n, p)", [decode_tokens, prompt])
    finally:
        server.shutdown()
    return Speed("browser", out["adapter"], out["decodeTokens"], out["tokPerS"])


def bench_web(artifact: Path, decode_tokens: int = 16, prompt: str = PROMPT) -> WebBench:
    native = native_speed(artifact, decode_tokens, prompt)
    return WebBench(native, browser_speed(artifact, decode_tokens, prompt))
