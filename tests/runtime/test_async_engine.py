"""The one async path: deltas reach asyncio, cancellation aborts, failures are contained."""

from __future__ import annotations

import asyncio

import pytest

from mlcx.errors import ContextWindowError, InvalidFieldError, MaxTokensTooLargeError, PromptError
from mlcx.runtime.api.async_engine import AsyncEngine, EngineFailedError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.constraint import Constraint
from tests.support.event_loop import on_event_loop
from tests.support.slow_runner import SlowRunner

GREEDY = SamplingParams.greedy(max_tokens=16, ignore_eos=True)


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled()


async def tokens_of(engine: AsyncEngine, prompt, params=GREEDY) -> list[int]:
    return [t async for d in engine.generate(prompt, params) for t in d.token_ids]


def test_concurrent_generate_matches_llm(artifact):
    prompts = ["hello world", "The capital of France is", "12345 for testing"]
    expected = [o.outputs[0].token_ids for o in LLM(artifact).generate(prompts, GREEDY)]

    async def main():
        engine = AsyncEngine(Engine(artifact))
        try:
            return await asyncio.gather(*(tokens_of(engine, p) for p in prompts))
        finally:
            await engine.close()

    assert asyncio.run(main()) == expected


def test_cancelling_the_consumer_aborts_the_request(artifact):
    core = Engine(artifact)
    core.runner = SlowRunner(core.runner, 0.005)

    async def main():
        engine = AsyncEngine(core)
        started = asyncio.Event()

        async def consume():
            async for _ in engine.generate("hello", GREEDY.with_updates(max_tokens=200)):
                started.set()

        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        while core.has_work() or engine.stats.running:
            await asyncio.sleep(0.01)
        await engine.close()

    asyncio.run(main())
    assert core.kv.pool.num_used == 0
    assert core.stats().generated_tokens < 200


def test_submit_validates_before_queueing(artifact):
    async def main():
        engine = AsyncEngine(Engine(artifact))
        with pytest.raises(ContextWindowError, match="context window") as caught:
            engine.submit(["ok", [5] * 10_000], GREEDY)
        assert caught.value.param == "prompt"
        with pytest.raises(MaxTokensTooLargeError, match="max_tokens") as caught:
            engine.submit(["ok"], GREEDY.with_updates(max_tokens=10_000))
        assert caught.value.param == "max_tokens"
        with pytest.raises(PromptError, match="outside the vocabulary") as caught:
            engine.submit([[5, 10**6]], GREEDY)
        assert caught.value.param == "prompt"
        with pytest.raises(ValueError, match="logit_bias") as caught:
            engine.submit(["ok"], GREEDY.with_updates(logit_bias={10**6: 1.0}))
        assert caught.value.param == "logit_bias"
        await asyncio.sleep(0.05)
        assert not engine.engine.has_work() and engine.engine.kv.pool.num_used == 0
        await engine.close()

    asyncio.run(main())


def test_close_fails_requests_in_flight(artifact):
    core = Engine(artifact)
    core.runner = SlowRunner(core.runner, 0.005)

    async def main():
        engine = AsyncEngine(core)
        stream = engine.submit(["hello"], GREEDY.with_updates(max_tokens=200))
        async with stream:
            await stream.__anext__()
            await engine.close()
            with pytest.raises(EngineFailedError, match="shut down"):
                async for _ in stream:
                    pass
        with pytest.raises(EngineFailedError):
            engine.submit(["hello"], GREEDY)

    asyncio.run(main())


def test_prepare_encodes_off_the_event_loop(artifact, monkeypatch):
    core = Engine(artifact)
    encode = core.tokenizer.encode
    loop_running = []  # per encode call: was an event loop running on the calling thread?

    def recording(*args, **kwargs):
        loop_running.append(on_event_loop())
        return encode(*args, **kwargs)

    monkeypatch.setattr(core.tokenizer, "encode", recording)
    messages = [{"role": "user", "content": "hello"}]

    async def main():
        engine = AsyncEngine(core)
        prepared = (
            await engine.prepare(["hello world", [5, 6]]),
            await engine.prepare_chat(messages),
        )
        await engine.close()
        return prepared

    (text, ids), chat = asyncio.run(main())
    assert loop_running == [False, False]  # the text prompt, then the rendered chat
    assert text == encode("hello world", add_special_tokens=True) and ids == [5, 6]
    assert chat == core.prompts.chat(messages)


def test_constraints_compile_off_the_event_loop(artifact, monkeypatch):
    core = Engine(artifact)
    template = core.constraints._template
    loop_running = []  # per compilation: was an event loop running on the calling thread?

    def recording(constraint):
        loop_running.append(on_event_loop())
        return template(constraint)

    monkeypatch.setattr(core.constraints, "_template", recording)
    params = GREEDY.with_updates(ignore_eos=False, constraint=Constraint("regex", "[a-c]{4}"))
    refused = GREEDY.with_updates(constraint=Constraint("regex", "[a-", "regex"))

    async def main():
        engine = AsyncEngine(core)
        try:
            text = "".join([d.text async for d in engine.generate("hello", params)])
            with pytest.raises(InvalidFieldError, match="unclosed character class") as err:
                await engine.prepare_constraint(refused)
            return text, err.value.param
        finally:
            await engine.close()

    text, param = asyncio.run(main())
    assert loop_running == [False, False]
    assert len(text) == 4 and set(text) <= set("abc") and param == "regex"
