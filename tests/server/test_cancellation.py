"""Clients that go away abort their requests and free every KV block (real sockets)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving

LONG = {"max_tokens": 200, "extra_body": {"ignore_eos": True}}


def test_fifty_aborted_streams_leave_no_blocks_in_use(artifact):
    with serving(artifact, EngineConfig(max_batch=16)) as s:

        async def open_and_drop(aclient, i: int) -> None:
            stream = await aclient.completions.create(
                model=s.model, prompt=f"{i} hello world", stream=True, **LONG
            )
            async for _ in stream:
                break  # one token, then hang up
            await stream.close()

        async def main() -> None:
            async with s.async_client(max_retries=0) as aclient:
                await asyncio.gather(*(open_and_drop(aclient, i) for i in range(50)))

        asyncio.run(main())
        s.wait_idle()
        stats = s.engine.stats()
        assert s.engine.kv.pool.num_used == 0 and stats.kv_usage == 0.0
        assert stats.running == stats.waiting == 0
        assert stats.generated_tokens < 50 * LONG["max_tokens"] // 4  # aborted, not run out

        out = s.client().completions.create(model=s.model, prompt="hello", max_tokens=4)
        assert out.usage.completion_tokens >= 1 and out.choices[0].finish_reason in {
            "length",
            "stop",
        }


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_disconnect_during_a_non_stream_request_aborts_it(artifact, path):
    with serving(artifact, step_delay_s=0.01) as s:
        body = {"model": s.model, "max_tokens": 200, "ignore_eos": True}
        body.update(
            {"prompt": "hello"}
            if "chat" not in path
            else {"messages": [{"role": "user", "content": "hello"}]}
        )
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(s.url + path, json=body, timeout=0.3)
        s.wait_idle(timeout=2.0)  # 200 steps would take 2 s or more
        assert s.engine.kv.pool.num_used == 0
        assert s.engine.stats().generated_tokens < 100
