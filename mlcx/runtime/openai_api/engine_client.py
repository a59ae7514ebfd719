"""What the OpenAI layer needs from the served model: one interface, two implementations.

`AsyncEngine` (mlcx.runtime.api) serves an engine in this process; `RayEngineClient`
(mlcx.server.replicas) sends each request to one of several engine replicas on Ray Serve.
The serving path (serving.py), AsyncMLCEngine and the server's metrics see only this surface,
so there is one code path for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mlcx.artifact.config import Artifact
from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.stats import EngineStats
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.tokenizer import Tokenizer


class EngineStream(Protocol):
    """The deltas of one API request (see `mlcx.runtime.api.async_engine.RequestStream`)."""

    request_ids: list[str]
    prompt_ids: list[list[int]]

    def prompt_index(self, delta: Delta) -> int: ...
    def abort_unfinished(self) -> None: ...
    def __aiter__(self) -> EngineStream: ...
    async def __anext__(self) -> Delta: ...
    async def __aenter__(self) -> EngineStream: ...
    async def __aexit__(self, *exc_info) -> None: ...


class EngineClient(Protocol):
    @property
    def artifact(self) -> Artifact: ...
    @property
    def tokenizer(self) -> Tokenizer: ...
    @property
    def sampling_defaults(self) -> Mapping[str, Any]: ...
    @property
    def adapters(self) -> tuple[str, ...]:
        """The names of the LoRA adapters a request may pick (mlcx.runtime.lora)."""
        ...

    async def prepare(self, prompts: Sequence[str | list[int]]) -> list[list[int]]: ...
    async def prepare_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]: ...

    async def prepare_chat_images(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> tuple[list[int], list[Any]]:
        """Token ids and images (in prompt order) of messages with decoded image parts;
        ImageError (400) where the model takes no images."""
        ...

    async def open(
        self,
        prompts: Sequence[list[int]],
        params: SamplingParams,
        images: Sequence[Sequence[Any]] | None = None,
        lora: LoraRequest | None = None,
    ) -> EngineStream:
        """Validate and queue the prompts (with `images[i]` for prompt i, each run with the
        adapter `lora` names): raises ValueError (400) or QueueFullError (503)."""
        ...

    async def replica_stats(self) -> dict[str, EngineStats]:
        """Stats of each engine, by replica label ("" for a single local engine)."""
        ...

    async def close(self) -> None: ...
