"""`mlcx bench lora`: decode speed of a batch whose streams run different LoRA adapters, against
the same batch on the model compiled without adapter slots, in the same run (vLLM's and
llama.cpp's users ask both: what does serving adapters cost, and what does mixing them cost).

Three runs of the same greedy streams, alternating rep by rep: `base` (the model without
slots), `slots` (the model with slots, every stream on slot 0: what compiling slots costs) and
`mixed` (stream i runs adapter i % k: k adapters in one batch). Speeds are medians. Decode
tok/s of a run: the tokens after each stream's first, over the time from the batch's first
token to its last."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.sample.params import SamplingParams

# a short chat prompt: the bench measures decode, as llama-bench's tg does
MESSAGES = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]
RUNS = ("base", "slots", "mixed")


@dataclass(frozen=True)
class DecodeRun:
    tok_s: float
    tokens: tuple[tuple[int, ...], ...]  # each stream's tokens


@dataclass(frozen=True)
class LoraBenchReport:
    base_artifact: str
    lora_artifact: str
    adapters: tuple[str, ...]
    streams: int
    prompt_tokens: int
    tok_s: dict[str, float]  # RUNS -> median decode tok/s

    def ratio(self, run: str) -> float:
        return self.tok_s[run] / self.tok_s["base"]

    def lines(self) -> list[str]:
        return [
            f"base: {self.base_artifact}",
            f"with adapter slots: {self.lora_artifact}",
            f"{self.streams} streams, {self.prompt_tokens} prompt tokens, greedy; adapters "
            f"{', '.join(self.adapters)} mixed in the batch (stream i: adapter i mod "
            f"{len(self.adapters)})",
            f"decode tok/s  base {self.tok_s['base']:.1f}",
            f"decode tok/s  slots, no adapter {self.tok_s['slots']:.1f} "
            f"({self.ratio('slots'):.2f}x the base)",
            f"decode tok/s  adapters mixed {self.tok_s['mixed']:.1f} "
            f"({self.ratio('mixed'):.2f}x the base)",
        ]


def decode_run(
    llm: LLM, prompt: list[int], loras: list[LoraRequest | None], max_tokens: int
) -> DecodeRun:
    """Stream i with loras[i], all added before the first step."""
    params = SamplingParams.greedy(max_tokens=max_tokens, ignore_eos=True)
    engine = llm.engine
    for i, lora in enumerate(loras):
        engine.add_request(f"bench-{i}", prompt, params, (), lora)
    tokens: list[list[int]] = [[] for _ in loras]
    first = last = 0.0
    while engine.has_work():
        deltas = engine.step()
        now = time.perf_counter()
        for delta in deltas:
            if delta.token_ids and not first:
                first = now
            tokens[int(delta.request_id.removeprefix("bench-"))].extend(delta.token_ids)
        last = now if deltas else last
    decoded = sum(len(t) - 1 for t in tokens)
    return DecodeRun(decoded / max(last - first, 1e-9), tuple(tuple(t) for t in tokens))


def run_lora_bench(
    base: str,
    with_slots: str,
    adapters: tuple[tuple[str, str], ...],
    streams: int = 8,
    reps: int = 3,
    max_tokens: int = 128,
    say=print,
) -> LoraBenchReport:
    """`base` and `with_slots`: the model's artifacts without and with adapter slots;
    `adapters`: (name, PEFT folder or GGUF adapter) loaded into the slots."""
    if not adapters or streams < 1 or reps < 1 or max_tokens < 2:
        raise ValueError(
            f"the LoRA bench needs an adapter, a stream, a rep and 2 tokens at least; got "
            f"{len(adapters)} adapters, {streams} streams, {reps} reps, {max_tokens} tokens"
        )
    config = EngineConfig(max_batch=streams)
    engines = {"base": LLM(base, config), "slots": LLM(with_slots, config, lora=dict(adapters))}
    engines["mixed"] = engines["slots"]
    prompt = engines["base"].chat_prompt(MESSAGES)
    loras = {
        "base": [None] * streams,
        "slots": [None] * streams,
        "mixed": [LoraRequest(adapters[i % len(adapters)][0]) for i in range(streams)],
    }
    for run in RUNS:  # warm up
        decode_run(engines[run], prompt, loras[run], 4)
    speeds: dict[str, list[float]] = {run: [] for run in RUNS}
    for rep in range(reps):
        say(f"rep {rep + 1}/{reps}")
        for run in RUNS:
            speeds[run].append(decode_run(engines[run], prompt, loras[run], max_tokens).tok_s)
    names = tuple(name for name, _ in adapters)
    medians = {run: statistics.median(s) for run, s in speeds.items()}
    return LoraBenchReport(base, with_slots, names, streams, len(prompt), medians)
