"""A conversation that keeps its history: what `mlcx chat` (and any app) talks to."""

from __future__ import annotations

from collections.abc import Iterator

from PIL import Image

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.reasoning import ParsedReply, ReplyEvent


class ChatSession:
    def __init__(
        self,
        llm: LLM,
        params: SamplingParams,
        system: str | None = None,
        lora: LoraRequest | None = None,
    ):
        self.llm = llm
        self.params = params
        self.lora = lora  # the adapter every reply runs with
        self._start = [{"role": "system", "content": system}] if system else []
        self.messages: list[dict] = list(self._start)
        self.pending: list[Image.Image] = []  # images for the next message

    def reset(self) -> None:
        self.messages = list(self._start)
        self.pending = []

    def attach(self, image: Image.Image) -> None:
        """Send `image` with the next message (before its text)."""
        self.pending.append(image)

    def prompt_ids(self) -> list[int]:
        return self.llm.chat_inputs(self.messages)[0]

    def _user_message(self, text: str) -> dict:
        if not self.pending:
            return {"role": "user", "content": text}
        parts = [{"type": "image", "image": image} for image in self.pending]
        return {"role": "user", "content": [*parts, {"type": "text", "text": text}]}

    def send(self, text: str) -> Iterator[ReplyEvent]:
        """Stream the reply to `text` as the model's format splits it (reasoning, content,
        tool calls: mlcx.runtime.text.reasoning); the exchange joins the history once the
        reply ends, its reasoning beside its content for the chat template to keep or drop.
        If the conversation no longer fits the context window, ContextWindowError is raised
        and the history is left as it was."""
        self.messages.append(self._user_message(text))
        try:
            prompt, images = self.llm.chat_inputs(self.messages)
            self.llm.engine.check_fits(len(prompt), self.params.max_tokens)
        except Exception:
            self.messages.pop()
            raise
        self.pending = []
        reply = self.llm.reply(prompt)
        for delta in self.llm.stream(prompt, self.params, images, self.lora):
            yield from reply.feed(delta.text)
            if delta.finished:
                yield from reply.finish()
        self.messages.append(_assistant(reply))


def _assistant(reply: ParsedReply) -> dict:
    message = {"role": "assistant", "content": reply.content}
    return {**message, "reasoning_content": reply.reasoning} if reply.reasoning else message
