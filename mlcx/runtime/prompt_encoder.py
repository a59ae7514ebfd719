"""Prompts to token ids: text encoded, ids checked against the vocabulary, conversations
rendered in the model's chat template. Shared by the engine and by a front that only routes
(`mlcx serve --replicas`), which tokenizes before choosing a replica."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mlcx.errors import PromptError
from mlcx.runtime.chat_template import ChatTemplate
from mlcx.runtime.tokenizer import Tokenizer

Prompt = str | list[int]


class PromptEncoder:
    def __init__(self, tokenizer: Tokenizer, chat_template: ChatTemplate):
        self.tokenizer = tokenizer
        self.chat_template = chat_template

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

    async def prepare(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """Token ids of each prompt, in a worker thread: encoding a long prompt on the event
        loop would stall every stream."""
        return await asyncio.to_thread(lambda: [self.tokenize(p) for p in prompts])

    async def prepare_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """Token ids of a conversation (and the tools it may call) in the model's chat
        template, ready for the reply (rendered and encoded in a worker thread)."""
        return await asyncio.to_thread(
            self.chat_template.prompt_ids, messages, self.tokenizer, tools
        )
