"""OpenAI response bodies and stream chunks, for chat and for legacy completions."""

from __future__ import annotations

import time
import uuid
from typing import Any

from mlcx.runtime.core.outputs import Completion, Delta
from mlcx.runtime.openai_api.call_syntax import detect_syntax
from mlcx.runtime.openai_api.logprobs import chat_logprobs, completion_logprobs
from mlcx.runtime.openai_api.reply import ChoiceReply
from mlcx.runtime.openai_api.tools import ToolPlan
from mlcx.runtime.text.reasoning import FORMATS, ReasoningFormat
from mlcx.runtime.text.tokenizer import Tokenizer


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


class ResponseFormat:
    """What both endpoints share: the id, timestamps, the chunk and usage envelopes."""

    id_prefix = ""
    object = ""
    chunk_object = ""

    def __init__(self, model: str, tokenizer: Tokenizer, include_usage: bool = False):
        self.id = f"{self.id_prefix}-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model
        self.tokenizer = tokenizer
        self.include_usage = include_usage

    def _envelope(self, obj: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }

    def _chunk(self, choice: dict[str, Any]) -> dict[str, Any]:
        body = self._envelope(self.chunk_object, [choice])
        if self.include_usage:
            body["usage"] = None
        return body

    def usage_chunk(self, counts: dict[str, int]) -> dict[str, Any]:
        return {**self._envelope(self.chunk_object, []), "usage": counts}

    def response(self, choices: list[Completion], counts: dict[str, int]) -> dict[str, Any]:
        body = [self.choice(i, c) for i, c in enumerate(choices)]
        return {**self._envelope(self.object, body), "usage": counts}

    def start_chunks(self, prompt_ids: list[list[int]], n: int) -> list[dict[str, Any]]:
        """What a stream begins with, for `n` choices of each prompt."""
        return []

    def chunks(self, index: int, delta: Delta) -> list[dict[str, Any]]:
        raise NotImplementedError

    def choice(self, index: int, completion: Completion) -> dict[str, Any]:
        raise NotImplementedError


class ChatFormat(ResponseFormat):
    id_prefix = "chatcmpl"
    object = "chat.completion"
    chunk_object = "chat.completion.chunk"

    def __init__(
        self,
        model: str,
        tokenizer: Tokenizer,
        include_usage: bool = False,
        tools: ToolPlan | None = None,
        reasoning: ReasoningFormat = FORMATS["none"],
    ):
        """`reasoning`: the format replies are split by (reply.py)."""
        super().__init__(model, tokenizer, include_usage)
        self.tools = tools if tools is not None and tools.parse else None
        self.reasoning = reasoning
        self.call_syntax = detect_syntax(tokenizer.assets.chat_template)
        self._prompts: list[list[int]] = []  # while streaming: each choice's prompt ids
        self._replies: dict[int, ChoiceReply] = {}  # choice -> its reply, while streaming

    def start_chunks(self, prompt_ids: list[list[int]], n: int) -> list[dict[str, Any]]:
        """The first chunk of each choice carries the role, as OpenAI's do."""
        self._prompts = [ids for ids in prompt_ids for _ in range(n)]
        return [
            self._chunk(
                {
                    "index": i,
                    "delta": {"role": "assistant", "content": ""},
                    "logprobs": None,
                    "finish_reason": None,
                }
            )
            for i in range(len(self._prompts))
        ]

    def _new_reply(self, prompt_ids: list[int]) -> ChoiceReply:
        parser = self.reasoning.reply_parser(self.tokenizer, prompt_ids)
        return ChoiceReply(parser, self.tools, self.call_syntax)

    def _parts(self, index: int, delta: Delta) -> tuple[list[dict[str, Any]], ChoiceReply]:
        """The OpenAI deltas of one engine delta, and the choice's reply."""
        if index not in self._replies:
            self._replies[index] = self._new_reply(self._prompts[index])
        reply = self._replies[index]
        parts = reply.feed(delta.text) + (reply.finish() if delta.finished else [])
        if delta.finished and reply.called:
            parts.append({})  # OpenAI ends calls with an empty delta and the reason
        if not parts and delta.finished:
            # as vLLM and MLC-LLM end a reply: its text so far was all there is (a caller
            # printing each delta's content prints nothing more, not None)
            parts = [{"content": ""}]
        if not parts and delta.logprobs:
            parts = [{}]
        return parts, reply

    def chunks(self, index: int, delta: Delta) -> list[dict[str, Any]]:
        parts, reply = self._parts(index, delta)
        logprobs = chat_logprobs(self.tokenizer, delta.logprobs) if delta.logprobs else None
        reason = _finish_reason(reply, delta.finish_reason)
        return [
            self._chunk(
                {
                    "index": index,
                    "delta": part,
                    "logprobs": logprobs if i == 0 else None,
                    "finish_reason": reason if i == len(parts) - 1 else None,
                }
            )
            for i, part in enumerate(parts)
        ]

    def choice(self, index: int, completion: Completion) -> dict[str, Any]:
        logprobs = None
        if completion.logprobs:
            logprobs = chat_logprobs(self.tokenizer, completion.logprobs)
        reply = self._new_reply(completion.prompt_token_ids)
        return {
            "index": index,
            "message": {"role": "assistant", **reply.message(completion.text)},
            "logprobs": logprobs,
            "finish_reason": _finish_reason(reply, completion.finish_reason),
        }


def _finish_reason(reply: ChoiceReply, reason: str | None) -> str | None:
    """A reply that called tools and ended on its own ends for "tool_calls"."""
    return "tool_calls" if reply.called and reason == "stop" else reason


class CompletionFormat(ResponseFormat):
    id_prefix = "cmpl"
    object = "text_completion"
    chunk_object = "text_completion"

    def __init__(self, model: str, tokenizer: Tokenizer, include_usage: bool = False):
        super().__init__(model, tokenizer, include_usage)
        self._offsets: dict[int, int] = {}  # choice -> text offset of its next token

    def chunks(self, index: int, delta: Delta) -> list[dict[str, Any]]:
        if not (delta.text or delta.finished or delta.logprobs):
            return []
        logprobs = None
        if delta.logprobs:
            offset = self._offsets.get(index, 0)
            logprobs, self._offsets[index] = completion_logprobs(
                self.tokenizer, delta.logprobs, offset
            )
        return [
            self._chunk(
                {
                    "index": index,
                    "text": delta.text,
                    "logprobs": logprobs,
                    "finish_reason": delta.finish_reason,
                }
            )
        ]

    def choice(self, index: int, completion: Completion) -> dict[str, Any]:
        logprobs = None
        if completion.logprobs:
            logprobs, _ = completion_logprobs(self.tokenizer, completion.logprobs, 0)
        return {
            "index": index,
            "text": completion.text,
            "logprobs": logprobs,
            "finish_reason": completion.finish_reason,
        }
