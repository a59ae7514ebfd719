"""A conversation that keeps its history: what `mlcx chat` (and any app) talks to."""

from __future__ import annotations

from collections.abc import Iterator

from mlcx.runtime.llm import LLM
from mlcx.runtime.sample.params import SamplingParams


class ChatSession:
    def __init__(self, llm: LLM, params: SamplingParams, system: str | None = None):
        self.llm = llm
        self.params = params
        self._start = [{"role": "system", "content": system}] if system else []
        self.messages: list[dict] = list(self._start)

    def reset(self) -> None:
        self.messages = list(self._start)

    def prompt_ids(self) -> list[int]:
        return self.llm.chat_prompt(self.messages)

    def send(self, text: str) -> Iterator[str]:
        """Stream the reply to `text`; the exchange joins the history once the reply ends.
        If the conversation no longer fits the context window, ContextWindowError is raised
        and the history is left as it was."""
        self.messages.append({"role": "user", "content": text})
        try:
            prompt = self.prompt_ids()
            self.llm.engine.check_fits(len(prompt), self.params.max_tokens)
        except Exception:
            self.messages.pop()
            raise
        reply = []
        for delta in self.llm.stream(prompt, self.params):
            reply.append(delta.text)
            yield delta.text
        self.messages.append({"role": "assistant", "content": "".join(reply)})
