"""Two engine replicas on a local Ray instance behind the real app, for the replica tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import openai

from mlcx.artifact.config import Artifact
from mlcx.runtime.core.stats import EngineStats
from mlcx.server.app import create_app
from mlcx.server.replicas import ReplicaConfig
from mlcx.server.replicas.launch import start_replicas
from tests.support.live_server import live_server


@dataclass
class ServedReplicas:
    url: str
    engine: object  # the front's RayEngineClient
    model: str

    def client(self, **kw) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key="none", **kw)

    def async_client(self, **kw) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=f"{self.url}/v1", api_key="none", **kw)

    def stats(self) -> dict[str, EngineStats]:
        return asyncio.run(self.engine.replica_stats())

    def pids(self) -> dict[str, int]:
        return asyncio.run(self.engine.replica_pids())

    def wait_until(self, done, timeout_s: float = 30.0) -> None:
        """Until `done(stats of every replica)` (aborts are applied a step later)."""
        deadline = time.monotonic() + timeout_s
        while not done(stats := self.stats()):
            if time.monotonic() > deadline:
                raise AssertionError(f"replicas still busy: {stats}")
            time.sleep(0.05)

    def wait_for_replicas(self, count: int, timeout_s: float = 180.0) -> dict[str, int]:
        """Replica ids and pids once `count` replicas answer (after a restart, say)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                pids = self.pids()
            except Exception:  # a replica the router still lists has died
                pids = {}
            if len(pids) == count:
                return pids
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} replicas did not come up: {pids}")
            time.sleep(0.2)


@contextmanager
def serving_replicas(artifact, config: ReplicaConfig) -> Iterator[ServedReplicas]:
    art = Artifact(artifact)
    engine = start_replicas(art, config)
    with live_server(create_app(engine)) as url:
        yield ServedReplicas(url, engine, art.config.model_name)
