"""The front's engine client over the replicas' Ray Serve handle.

Prompts are tokenized here, so that a request is routed by the hashes of its first KV pages
(RouteKey). A request whose replica dies before it produced any output is launched again
(same request ids) on a live replica; one that dies later ends with EngineFailedError, which
the routes answer with their usual error (an SSE error event mid-stream).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ray.exceptions import RayActorError
from ray.serve.exceptions import DeploymentUnavailableError, ReplicaUnavailableError

from mlcx.artifact.config import Artifact
from mlcx.errors import ImageError, InvalidFieldError
from mlcx.runtime.api.async_engine import EngineFailedError
from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.stats import EngineStats
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.prompt_encoder import PromptEncoder
from mlcx.runtime.text.tokenizer import Tokenizer
from mlcx.server.errors import SERVER_ERROR, APIError
from mlcx.server.replicas.config import ReplicaConfig
from mlcx.server.replicas.deployment import Failed, Rejected
from mlcx.server.replicas.route_key import RouteKey, prefix_hashes
from mlcx.server.replicas.router import live_replicas

# A replica that died or cannot be reached (ActorDiedError and ActorUnavailableError are
# RayActorErrors).
REPLICA_GONE = (RayActorError, DeploymentUnavailableError, ReplicaUnavailableError)
_STATS_TIMEOUT_S = 5.0


class RayEngineClient:
    def __init__(self, handle, artifact: Artifact, config: ReplicaConfig, on_close=None):
        self._handle = handle
        self._artifact = artifact
        self._config = config
        self._on_close = on_close
        tokenizer = Tokenizer.from_dir(artifact.path)
        self._prompts = PromptEncoder(tokenizer)

    @property
    def artifact(self) -> Artifact:
        return self._artifact

    @property
    def tokenizer(self) -> Tokenizer:
        return self._prompts.tokenizer

    @property
    def sampling_defaults(self) -> Mapping[str, Any]:
        return self._artifact.config.sampling

    async def prepare(self, prompts: Sequence[str | list[int]]) -> list[list[int]]:
        return await self._prompts.prepare(prompts)

    async def prepare_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        return await self._prompts.prepare_chat(messages, tools)

    async def prepare_chat_images(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> tuple[list[int], list[Any]]:
        raise ImageError("images are not served through engine replicas (--replicas) yet")

    @property
    def adapters(self) -> tuple[str, ...]:
        return ()  # LoRA adapters are not served through replicas yet

    async def open(
        self, prompts: Sequence[list[int]], params: SamplingParams, images=None, lora=None
    ) -> RemoteStream:
        if images:
            raise ImageError("images are not served through engine replicas (--replicas) yet")
        if lora is not None:
            raise InvalidFieldError(
                "LoRA adapters are not served through engine replicas (--replicas) yet", "model"
            )
        pages = prefix_hashes(prompts[0], self._artifact.config.page_size, self._config.route_pages)
        stream = RemoteStream(self, f"req-{uuid.uuid4().hex}", list(prompts), params)
        await stream.launch(RouteKey(page_hashes=pages))
        return stream

    async def replica_stats(self) -> dict[str, EngineStats]:
        """Stats of every live replica, asked of each in turn through the router."""
        calls = [self._control("stats", r) for r in live_replicas(self._config.app_name)]
        answers = await asyncio.gather(*calls, return_exceptions=True)
        return dict(a for a in answers if isinstance(a, tuple))

    async def replica_pids(self) -> dict[str, int]:
        calls = [self._control("pid", r) for r in live_replicas(self._config.app_name)]
        return dict(await asyncio.gather(*calls))

    async def close(self) -> None:
        if self._on_close is not None:
            await asyncio.to_thread(self._on_close)

    async def _control(self, method: str, replica: str) -> tuple:
        call = getattr(self._handle, method).remote(route=RouteKey(replica=replica))
        return await asyncio.wait_for(call, _STATS_TIMEOUT_S)

    async def _launch(self, request_id: str, stream: RemoteStream, route: RouteKey):
        """The replica's response generator, once a replica accepted the request."""
        last: Exception | None = None
        for attempt in range(self._config.start_retries + 1):
            gen = self._handle.options(stream=True).generate.remote(
                request_id, stream.prompt_ids, stream.params, route=route
            )
            try:
                first = await gen.__anext__()
            except REPLICA_GONE as err:
                last = err
                await asyncio.sleep(0.1 * (attempt + 1))
                continue
            if isinstance(first, Rejected):
                raise first.error
            return gen
        raise APIError(
            503,
            f"no replica could take the request: {last}",
            SERVER_ERROR,
            code="replica_unavailable",
        )


class RemoteStream:
    """An EngineStream whose deltas come from a replica (see RequestStream)."""

    def __init__(self, client: RayEngineClient, base_id: str, prompt_ids, params):
        self._client = client
        n = len(prompt_ids)
        self.request_ids = [f"{base_id}-{i}" for i in range(n)] if n > 1 else [base_id]
        self.prompt_ids: list[list[int]] = prompt_ids
        self.params = params
        self._base_id = base_id
        self._index = {request_id: i for i, request_id in enumerate(self.request_ids)}
        self._route = RouteKey()
        self._gen = None
        self._delivered = False  # once a delta reached the caller, a retry would repeat it
        self._done = False

    async def launch(self, route: RouteKey) -> None:
        self._route = route
        self._gen = await self._client._launch(self._base_id, self, route)

    def prompt_index(self, delta: Delta) -> int:
        return self._index[delta.request_id]

    def __aiter__(self) -> RemoteStream:
        return self

    async def __anext__(self) -> Delta:
        while True:
            try:
                item = await self._gen.__anext__()
            except StopAsyncIteration:
                self._done = True
                raise
            except REPLICA_GONE as err:
                if self._delivered:
                    self._done = True
                    message = f"the replica serving this request died: {err}"
                    raise EngineFailedError(message) from None
                await self.launch(self._route)
                continue
            if isinstance(item, Failed):
                self._done = True
                raise EngineFailedError(item.message)
            self._delivered = True
            return item

    def abort_unfinished(self) -> None:
        """Cancel the replica's generator: the replica aborts the request and frees its KV
        pages (see EngineReplica.generate). Idempotent."""
        if not self._done and self._gen is not None:
            self._gen.cancel()
        self._done = True

    async def __aenter__(self) -> RemoteStream:
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.abort_unfinished()
