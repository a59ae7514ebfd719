"""Prompts to token ids: text encoded, ids checked against the vocabulary, conversations
rendered in the model's chat template. The one way from either to ids: the engine, the Python
API, `mlcx chat` and the server all use it, and so does a front that only routes (`mlcx serve
--replicas`), which tokenizes before choosing a replica."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mlcx.errors import PromptError
from mlcx.runtime.text.chat_template import ChatTemplate
from mlcx.runtime.text.tokenizer import Tokenizer

Prompt = str | list[int]


class PromptEncoder:
    def __init__(self, tokenizer: Tokenizer, chat_template: ChatTemplate | None = None):
        self.tokenizer = tokenizer
        self.chat_template = chat_template or ChatTemplate.of(tokenizer.assets)

    def tokenize(self, prompt: Prompt) -> list[int]:
        if isinstance(prompt, str):
            return self.tokenizer.encode(prompt, add_special_tokens=True)
        if not prompt:
            raise PromptError("the prompt is empty; give at least one token")
        bad = [t for t in prompt if not 0 <= int(t) < self.tokenizer.vocab_size]
        if bad:
            raise PromptError(
                f"token ids {bad[:5]} are outside the vocabulary "
                f"(0..{self.tokenizer.vocab_size - 1})"
            )
        return [int(t) for t in prompt]

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """Token ids of a conversation (and the tools it may call), ready for the reply. The
        template writes the special tokens (BOS included) itself, so the tokenizer adds none."""
        text = self.chat_template.render(messages, add_generation_prompt=True, tools=tools)
        return self.tokenizer.encode(text, add_special_tokens=False)

    async def prepare(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """Token ids of each prompt, in a worker thread: encoding a long prompt on the event
        loop would stall every stream."""
        return await asyncio.to_thread(lambda: [self.tokenize(p) for p in prompts])

    async def prepare_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """Token ids of a conversation (and the tools it may call) in the model's chat
        template, ready for the reply (rendered and encoded in a worker thread)."""
        return await asyncio.to_thread(self.chat, messages, tools)
