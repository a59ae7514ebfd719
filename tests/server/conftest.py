"""A tiny compiled model served by the real app on a free port, and clients for it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import openai
import pytest

from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.server.app import create_app
from mlcx.server.config import ServerConfig
from tests.support.live_server import live_server
from tests.support.slow_runner import SlowRunner


@dataclass
class Served:
    url: str
    engine: Engine
    model: str

    def client(self, **kw) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=kw.pop("api_key", "none"), **kw)

    def async_client(self, **kw) -> openai.AsyncOpenAI:
        key = kw.pop("api_key", "none")
        return openai.AsyncOpenAI(base_url=f"{self.url}/v1", api_key=key, **kw)

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Until the engine has nothing running or waiting (aborts are applied a step later)."""
        deadline = time.monotonic() + timeout
        while self.engine.has_work() or self.engine.stats().running:
            if time.monotonic() > deadline:
                raise AssertionError(f"engine still busy: {self.engine.stats()}")
            time.sleep(0.01)


@contextmanager
def serving(
    artifact,
    engine_config: EngineConfig = EngineConfig(),
    config: ServerConfig = ServerConfig(),
    step_delay_s: float = 0.0,
) -> Iterator[Served]:
    engine = Engine(artifact, engine_config)
    if step_delay_s:
        engine.runner = SlowRunner(engine.runner, step_delay_s)
    with live_server(create_app(engine, config)) as url:
        yield Served(url, engine, engine.artifact.config.model_name)


@pytest.fixture(scope="session")
def artifact(compiled):
    return compiled()


@pytest.fixture(scope="module")
def served(artifact) -> Iterator[Served]:
    """Shared by a module's tests: assert nothing on engine-wide counters with it."""
    with serving(artifact, EngineConfig(prefill_chunk=64)) as s:
        yield s


@pytest.fixture
def client(served) -> openai.OpenAI:
    return served.client(max_retries=0)
