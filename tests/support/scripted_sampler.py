"""An engine whose sampled tokens are scripted: each choice of each request emits the
script's token ids in order (the last one again past its end), whatever the logits say.

Everything else is the real engine: the model still runs, the scheduler ends a choice on a
stop token or max_tokens, the output processor detokenizes, holds stop strings and reports.
Tiny random models write noise; this makes them write a reply in a real format.
"""

from __future__ import annotations

from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.sampler import SampleResult
from mlcx.runtime.text.tokenizer import Tokenizer


class ScriptedSampler:
    def __init__(self, engine: Engine):
        self.script: list[int] = []
        self._emitted: dict[tuple[str, int], int] = {}
        engine.outputs.sample = self.sample  # type: ignore[method-assign]

    def say(self, tokenizer: Tokenizer, text: str, stop: str) -> None:
        """Script `text` (special tokens written in it stay whole), then the stop token."""
        self.script = [*tokenizer.encode(text), tokenizer.token_to_id(stop)]

    def sample(self, logits, samples, drafts=None, proposals=None) -> list[list[SampleResult]]:
        out = []
        for _, request_id, index in samples:
            n = self._emitted.get((request_id, index), 0)
            self._emitted[(request_id, index)] = n + 1
            token = self.script[min(n, len(self.script) - 1)]
            out.append([SampleResult(token, None, None)])
        return out
