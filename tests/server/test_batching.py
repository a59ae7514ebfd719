"""Continuous batching through the server: concurrency changes nothing but the speed."""

from __future__ import annotations

import asyncio
import threading
import time

from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving

GREEDY = {"max_tokens": 24, "temperature": 0, "logprobs": 0, "extra_body": {"ignore_eos": True}}
PROMPTS = [f"{i}: The capital of France is Paris. " * (1 + i % 3) for i in range(8)]


def test_eight_concurrent_requests_equal_eight_sequential(artifact):
    with serving(artifact, EngineConfig(prefill_chunk=32)) as s:
        client = s.client()
        sequential = [
            client.completions.create(model=s.model, prompt=p, **GREEDY).choices[0].logprobs.tokens
            for p in PROMPTS
        ]
        peak = _watch_running(s.engine)

        async def concurrent():
            async with s.async_client() as aclient:
                calls = [
                    aclient.completions.create(model=s.model, prompt=p, **GREEDY) for p in PROMPTS
                ]
                return [r.choices[0].logprobs.tokens for r in await asyncio.gather(*calls)]

        assert asyncio.run(concurrent()) == sequential
        assert peak() > 1  # they really shared the batch


def _watch_running(engine):
    """Start sampling the engine's running count; the returned function stops and gives the peak."""
    seen, stop = [0], threading.Event()

    def watch():
        while not stop.is_set():
            seen[0] = max(seen[0], engine.stats().running)
            time.sleep(0.0005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()

    def peak() -> int:
        stop.set()
        thread.join()
        return seen[0]

    return peak


def test_a_new_request_starts_before_the_running_one_finishes(artifact):
    with serving(artifact, step_delay_s=0.005) as s:

        async def scenario() -> list[str]:
            events: list[str] = []
            async with s.async_client() as aclient:
                long = await aclient.chat.completions.create(
                    model=s.model,
                    messages=[{"role": "user", "content": "Tell me a long story."}],
                    max_tokens=150,
                    stream=True,
                    extra_body={"ignore_eos": True},
                )
                started = asyncio.Event()

                async def consume_long():
                    async for chunk in long:
                        if chunk.choices and chunk.choices[0].delta.content:
                            started.set()
                    events.append("long finished")

                task = asyncio.create_task(consume_long())
                await started.wait()
                short = await aclient.completions.create(model=s.model, prompt="hi", max_tokens=3)
                events.append(f"short finished: {short.choices[0].finish_reason}")
                await task
            return events

        events = asyncio.run(scenario())
        assert events[0].startswith("short finished") and events[1] == "long finished"
