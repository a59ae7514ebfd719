"""A real compiled hybrid model (the tiny Qwen3.5, tests/support/hybrid_models.py) served by the
real app: 16 concurrent streams each get the reply they get alone (openai client), and a stream
whose client goes away gives its state slot back (/metrics)."""

from __future__ import annotations

import asyncio

import pytest

from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving
from tests.server.test_metrics_and_health import scrape, value
from tests.support.hybrid_models import compiled_hybrid

STREAMS = 16
GREEDY = {"max_tokens": 10, "temperature": 0, "extra_body": {"ignore_eos": True}}
PROMPTS = [f"{i}: The capital of France is Paris. " * (1 + i % 5) for i in range(STREAMS)]


@pytest.fixture(scope="module")
def hybrid_artifact(tmp_path_factory):
    return compiled_hybrid(tmp_path_factory, "qwen3_5")


def test_sixteen_concurrent_streams_equal_each_alone(hybrid_artifact):
    with serving(hybrid_artifact, EngineConfig(max_batch=STREAMS)) as s:
        client = s.client(max_retries=0)
        alone = [
            client.completions.create(model=s.model, prompt=p, **GREEDY).choices[0].text
            for p in PROMPTS
        ]

        async def stream(aclient, prompt: str) -> str:
            chunks = await aclient.completions.create(
                model=s.model, prompt=prompt, stream=True, **GREEDY
            )
            return "".join([c.choices[0].text async for c in chunks if c.choices])

        async def together() -> list[str]:
            async with s.async_client(max_retries=0) as aclient:
                return await asyncio.gather(*(stream(aclient, p) for p in PROMPTS))

        assert asyncio.run(together()) == alone
        assert len(set(alone)) > 1  # the prompts lead to different replies
        s.wait_idle()
        assert value(scrape(s.url), "mlcx_state_slots_in_use") == 0


def test_a_dropped_stream_gives_its_state_slot_back(hybrid_artifact):
    with serving(hybrid_artifact, EngineConfig(max_batch=2), step_delay_s=0.02) as s:
        stream = s.client(max_retries=0).completions.create(
            model=s.model, prompt=PROMPTS[0], max_tokens=200, stream=True, temperature=0
        )
        for i, _ in enumerate(stream):
            if i == 3:
                break
        assert value(scrape(s.url), "mlcx_state_slots_in_use") == 1
        stream.close()
        s.wait_idle()
        assert value(scrape(s.url), "mlcx_state_slots_in_use") == 0
