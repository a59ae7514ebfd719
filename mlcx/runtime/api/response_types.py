"""What MLCEngine and AsyncMLCEngine return: the `openai` package's response types where it is
installed (so code written against the OpenAI client runs unchanged), the plain dataclasses of
plain_types.py with the same fields where it is not. Both are built from the JSON bodies the
server sends, so the server and the in-process engines answer alike."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mlcx.runtime.api import plain_types as plain

KINDS = ("chat", "chat_chunk", "completion", "embeddings", "models")


@functools.cache
def _openai_types() -> dict[str, Callable[[dict], Any]] | None:
    try:
        from openai import pagination, types
        from openai.types import chat
    except ImportError:
        return None
    models = pagination.SyncPage[types.Model]
    # `construct` is how the OpenAI client reads responses: nested objects typed, nothing
    # refused (a stream chunk's finish_reason is None until the last, which strict
    # validation of Completion refuses)
    return {
        "chat": chat.ChatCompletion.construct,
        "chat_chunk": chat.ChatCompletionChunk.construct,
        "completion": types.Completion.construct,
        "embeddings": types.CreateEmbeddingResponse.construct,
        "models": models.construct,
    }


_PLAIN: dict[str, type] = {
    "chat": plain.ChatCompletion,
    "chat_chunk": plain.ChatCompletionChunk,
    "completion": plain.Completion,
    "embeddings": plain.CreateEmbeddingResponse,
    "models": plain.ModelList,
}


def typed(kind: str, body: dict[str, Any], use_openai: bool = True) -> Any:
    """`body` (a response or chunk as JSON has it) as the response object of `kind`."""
    found = _openai_types() if use_openai else None
    if found is not None:
        return found[kind](**body)
    return plain.build(_PLAIN[kind], body)
