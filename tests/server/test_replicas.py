"""`mlcx serve --replicas`: two engine replicas on a local Ray instance behind the one app.

One Ray instance for the module (starting Ray takes seconds on 2 cores); the replica-kill
test runs last, since it leaves one replica restarted.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal

import httpx
import openai
import pytest

from mlcx.runtime.core.config import EngineConfig
from mlcx.server.replicas import ReplicaConfig
from tests.server.conftest import serving
from tests.support.replicas import serving_replicas
from tests.support.tiny_models import CORPUS

GREEDY = {"temperature": 0, "max_tokens": 12, "extra_body": {"ignore_eos": True}}
PROMPTS = ["hello world", "the model reads", "rivers and mountains", "a b c"]
SYSTEM = " ".join(CORPUS[:8])  # ~150 tokens with the tiny tokenizer: 9 full 16-token pages


@pytest.fixture(scope="module")
def replicas(artifact):
    config = ReplicaConfig(replicas=2, threads_per_replica=1, engine=EngineConfig(max_batch=24))
    with serving_replicas(artifact, config) as served:
        yield served


def chat(client, model, system: str, question: str, **kw):
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return client.chat.completions.create(model=model, messages=messages, **GREEDY, **kw)


def test_same_greedy_output_as_one_server(artifact, replicas):
    with serving(artifact) as single:
        for prompt in PROMPTS:
            want = single.client().completions.create(model=single.model, prompt=prompt, **GREEDY)
            got = replicas.client().completions.create(
                model=replicas.model, prompt=prompt, **GREEDY
            )
            assert got.choices[0].text == want.choices[0].text
            assert got.usage == want.usage
        want = chat(single.client(), single.model, "be brief", "hello world")
        streamed = chat(replicas.client(), replicas.model, "be brief", "hello world", stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert text == want.choices[0].message.content
    assert len(replicas.stats()) == 2


def test_requests_sharing_a_prefix_land_on_one_replica(replicas):
    questions = ["What is the capital of France?", "And of Italy?", "And Spain?", "Peru?"]
    for system in (SYSTEM, "[other] " + SYSTEM):
        before = replicas.stats()
        for question in questions:
            chat(replicas.client(), replicas.model, system, question)
        after = replicas.stats()
        served = {
            r: after[r].prompt_tokens - before[r].prompt_tokens
            for r in after
            if after[r].prompt_tokens > before[r].prompt_tokens
        }
        assert len(served) == 1, f"the shared prefix went to several replicas: {served}"
        [owner] = served
        hits = after[owner].prefix_hit_tokens - before[owner].prefix_hit_tokens
        assert hits >= 3 * 128  # each later request found the system prompt's pages cached


def test_a_burst_sharing_a_prefix_lands_on_one_replica(replicas):
    """Serve routes a burst concurrently; each choice must see the ones before it."""
    system = "[burst] " + SYSTEM
    before = replicas.stats()

    async def burst() -> None:
        async with replicas.async_client(max_retries=0) as aclient:
            await asyncio.gather(
                *(chat_async(aclient, replicas.model, system, f"question {i}?") for i in range(4))
            )

    asyncio.run(burst())
    after = replicas.stats()
    served = [r for r in after if after[r].prompt_tokens > before[r].prompt_tokens]
    assert len(served) == 1, f"the burst went to several replicas: {served}"


async def chat_async(aclient, model, system: str, question: str):
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return await aclient.chat.completions.create(model=model, messages=messages, **GREEDY)


def test_front_metrics_show_every_replica(replicas):
    replicas.client().completions.create(model=replicas.model, prompt="hello", **GREEDY)
    stats = replicas.stats()
    text = httpx.get(f"{replicas.url}/metrics").text
    for replica, s in stats.items():
        for name in ("requests_running", "requests_waiting", "kv_cache_usage_ratio"):
            assert re.search(rf'^mlcx_{name}{{replica="{replica}"}} \S+$', text, re.M)
        found = re.search(rf'^mlcx_prompt_tokens_total{{replica="{replica}"}} (\S+)$', text, re.M)
        assert float(found.group(1)) == s.prompt_tokens
    assert len(stats) == 2


def test_a_dropped_stream_frees_its_pages_on_the_replica(replicas):
    async def open_and_drop() -> None:
        async with replicas.async_client(max_retries=0) as aclient:
            stream = await aclient.completions.create(
                model=replicas.model,
                prompt="hello",
                stream=True,
                max_tokens=200,
                extra_body={"ignore_eos": True},
            )
            async for _ in stream:
                break
            await stream.close()

    before = replicas.stats()
    asyncio.run(open_and_drop())
    replicas.wait_until(lambda stats: all(s.running == s.waiting == 0 for s in stats.values()))
    after = replicas.stats()
    assert all(s.kv_usage == 0.0 for s in after.values())
    generated = sum(after[r].generated_tokens - before[r].generated_tokens for r in after)
    assert 1 <= generated < 200  # aborted on the replica, not run to max_tokens


def test_killing_a_replica_under_load_hangs_nothing(replicas):
    pids = replicas.wait_for_replicas(2)
    started = asyncio.Event()
    outcomes: list[str] = []

    async def one(aclient, i: int, first_tokens: list[int]) -> None:
        try:
            stream = await aclient.completions.create(
                model=replicas.model,
                prompt=f"{i} {PROMPTS[i % 4]}",
                stream=True,
                max_tokens=200,
                extra_body={"ignore_eos": True},
            )
            finish = None
            async for chunk in stream:
                if i not in first_tokens:
                    first_tokens.append(i)
                    if len(first_tokens) == 20:
                        started.set()
                finish = chunk.choices[0].finish_reason if chunk.choices else finish
            outcomes.append("completed" if finish == "length" else f"short: {finish}")
        except openai.APIError as err:
            outcomes.append(f"error: {err}")

    async def main() -> None:
        first_tokens: list[int] = []
        async with replicas.async_client(max_retries=0, timeout=120) as aclient:
            load = [asyncio.create_task(one(aclient, i, first_tokens)) for i in range(20)]
            await started.wait()
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            await asyncio.wait_for(asyncio.gather(*load), 120)  # a hang fails here

    asyncio.run(main())
    assert len(outcomes) == 20
    assert not [o for o in outcomes if o.startswith("short")], outcomes
    errors = [o for o in outcomes if o.startswith("error")]
    assert errors, "no stream was on the killed replica"
    assert all("died" in e for e in errors), errors
    for prompt in PROMPTS:
        out = replicas.client().completions.create(model=replicas.model, prompt=prompt, **GREEDY)
        assert out.usage.completion_tokens == GREEDY["max_tokens"]
    restarted = replicas.wait_for_replicas(2)
    assert set(restarted.values()) != set(pids.values())
