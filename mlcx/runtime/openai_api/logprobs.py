"""Token logprobs in the two OpenAI shapes: chat (`content` entries) and legacy completions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mlcx.runtime.sample.sampler import SampleResult
from mlcx.runtime.text.tokenizer import Tokenizer


def token_text(tokenizer: Tokenizer, token_id: int) -> str:
    return tokenizer.decode([token_id], skip_special_tokens=False)


def _entry(tokenizer: Tokenizer, token_id: int, logprob: float | None) -> dict[str, Any]:
    text = token_text(tokenizer, token_id)
    return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}


def chat_logprobs(tokenizer: Tokenizer, results: Sequence[SampleResult]) -> dict[str, Any]:
    content = []
    for result in results:
        entry = _entry(tokenizer, result.token_id, result.logprob)
        entry["top_logprobs"] = [_entry(tokenizer, t, lp) for t, lp in result.top_logprobs or ()]
        content.append(entry)
    return {"content": content}


def completion_logprobs(
    tokenizer: Tokenizer, results: Sequence[SampleResult], offset: int
) -> tuple[dict[str, Any], int]:
    """(the logprobs object, the text offset after these tokens)."""
    tokens, offsets = [], []
    for result in results:
        offsets.append(offset)
        tokens.append(token_text(tokenizer, result.token_id))
        offset += len(tokens[-1])
    top = [
        {token_text(tokenizer, t): lp for t, lp in result.top_logprobs or ()} for result in results
    ]
    body = {
        "tokens": tokens,
        "token_logprobs": [r.logprob for r in results],
        "top_logprobs": top,
        "text_offset": offsets,
    }
    return body, offset
