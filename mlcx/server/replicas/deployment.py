"""One engine replica: the Ray Serve deployment class (`launch` wraps it with
`serve.deployment`). It loads the artifact the front compiled (never compiles), serves
requests with its own AsyncEngine and streams their deltas back.

A request's stream starts with `Accepted` (or `Rejected` with the error for a 400 or 503),
then its deltas; an engine failure ends it with `Failed`. Errors travel as values, so the
front re-raises the engine's own exception types rather than Ray's wrappers.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

from mlcx.errors import MlcxError
from mlcx.runtime.api.async_engine import AsyncEngine, EngineFailedError
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.stats import EngineStats
from mlcx.runtime.sample.params import SamplingParams
from mlcx.server.replicas.route_key import RouteKey


@dataclass(frozen=True)
class Accepted:
    replica: str


@dataclass(frozen=True)
class Rejected:
    error: Exception


@dataclass(frozen=True)
class Failed:
    message: str


class EngineReplica:
    def __init__(self, artifact_path: str, engine_config: EngineConfig):
        from ray import serve

        self.replica_id = serve.get_replica_context().replica_id.unique_id
        self.engine = AsyncEngine(Engine(artifact_path, engine_config))

    async def generate(
        self,
        request_id: str,
        prompt_ids: list[list[int]],
        params: SamplingParams,
        route: RouteKey,
    ) -> AsyncIterator[Accepted | Rejected | Failed | Delta]:
        """Cancelling this generator (the front's client went away) raises CancelledError at
        its current `yield`; leaving `async with stream` then aborts the request here and
        frees its KV pages."""
        try:
            await self.engine.prepare_constraint(params)
            stream = self.engine.submit(prompt_ids, params, request_id)
        except (MlcxError, ValueError) as err:
            yield Rejected(err)
            return
        async with stream:
            yield Accepted(self.replica_id)
            try:
                async for delta in stream:
                    yield delta
            except EngineFailedError as err:
                yield Failed(str(err))

    async def stats(self, route: RouteKey) -> tuple[str, EngineStats]:
        return self.replica_id, self.engine.stats

    async def pid(self, route: RouteKey) -> tuple[str, int]:
        """This replica's process id (what a fault-injection test kills)."""
        return self.replica_id, os.getpid()
