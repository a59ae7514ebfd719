"""POST /v1/embeddings in OpenAI's shape: `input` a string, a list of strings, a token-id list
or a list of them; `encoding_format` float or base64 (little-endian float32, as OpenAI's
client decodes it); `dimensions` for models trained to be truncated."""

from __future__ import annotations

import base64
from typing import Literal, Protocol

import numpy as np

from mlcx.errors import InvalidFieldError
from mlcx.runtime.openai_api.errors import bad_request
from mlcx.runtime.openai_api.schemas import _Body

EmbeddingInput = str | list[str] | list[int] | list[list[int]]


class Embeddings(Protocol):
    vectors: np.ndarray  # float32 [inputs, dimensions]
    prompt_tokens: int


class EmbeddingClient(Protocol):
    """What answers embeddings (mlcx.runtime.api.async_embedder.AsyncEmbedder)."""

    async def embed(self, inputs: list, dimensions: int | None) -> Embeddings: ...


class EmbeddingRequest(_Body):
    model: str
    input: EmbeddingInput
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = None
    user: str | None = None


def _inputs(value: EmbeddingInput) -> list:
    if isinstance(value, str):
        return [value]
    if value and all(isinstance(t, int) for t in value):
        return [value]  # one token-id list
    return list(value)


def _encode(vector: np.ndarray, encoding: str):
    if encoding == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return vector.tolist()


def _body(result: Embeddings, model: str, encoding: str) -> dict:
    data = [
        {"object": "embedding", "index": i, "embedding": _encode(v, encoding)}
        for i, v in enumerate(result.vectors)
    ]
    tokens = result.prompt_tokens
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}


async def create_embeddings(embedder: EmbeddingClient, body: EmbeddingRequest) -> dict:
    try:
        result = await embedder.embed(_inputs(body.input), body.dimensions)
    except InvalidFieldError as err:
        raise bad_request(str(err), param=err.param) from None
    return _body(result, body.model, body.encoding_format)
