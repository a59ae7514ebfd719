"""The OpenAI API as the official client sees it: chat and completions, streaming or not."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support.event_loop import on_event_loop

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the capital of France?"},
]
PROMPT = "The capital of France is"
LONG = {"max_tokens": 12, "extra_body": {"ignore_eos": True}, "temperature": 0}


def chat_prompt_tokens(engine, messages) -> int:
    text = engine.prompts.chat_template.render(messages, add_generation_prompt=True)
    return len(engine.tokenizer.encode(text, add_special_tokens=False))


def test_models_and_health(served, client):
    assert [m.id for m in client.models.list().data] == [served.model]
    health = httpx.get(f"{served.url}/health")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})


def test_chat_usage_matches_the_tokenizer(served, client):
    out = client.chat.completions.create(model=served.model, messages=MESSAGES, **LONG)
    [choice] = out.choices
    assert out.object == "chat.completion" and choice.message.role == "assistant"
    assert choice.finish_reason == "length"
    assert out.usage.prompt_tokens == chat_prompt_tokens(served.engine, MESSAGES)
    assert out.usage.completion_tokens == 12
    assert out.usage.total_tokens == out.usage.prompt_tokens + 12


def test_completion_usage_matches_the_tokenizer(served, client):
    out = client.completions.create(model=served.model, prompt=PROMPT, logprobs=2, **LONG)
    [choice] = out.choices
    expected = len(served.engine.tokenizer.encode(PROMPT, add_special_tokens=True))
    assert out.usage.prompt_tokens == expected
    assert out.usage.completion_tokens == len(choice.logprobs.tokens) == 12
    assert all(len(top) == 2 for top in choice.logprobs.top_logprobs)


def test_prompts_are_encoded_off_the_event_loop(served, client, monkeypatch):
    """The loop serves every stream: encoding a long prompt on it would stall them all."""
    encode = served.engine.tokenizer.encode
    on_loop = []

    def recording(*args, **kwargs):
        on_loop.append(on_event_loop())
        return encode(*args, **kwargs)

    monkeypatch.setattr(served.engine.tokenizer, "encode", recording)
    client.completions.create(model=served.model, prompt=PROMPT, max_tokens=2)
    client.chat.completions.create(model=served.model, messages=MESSAGES, max_tokens=2)
    assert len(on_loop) >= 2 and not any(on_loop)


def test_chat_stream_equals_non_stream(served, client):
    full = client.chat.completions.create(model=served.model, messages=MESSAGES, **LONG)
    chunks = list(
        client.chat.completions.create(
            model=served.model,
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
            **LONG,
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage == full.usage
    assert all(c.usage is None for c in chunks[:-1])


def test_completion_stream_equals_non_stream(served, client):
    full = client.completions.create(model=served.model, prompt=PROMPT, **LONG)
    chunks = list(client.completions.create(model=served.model, prompt=PROMPT, stream=True, **LONG))
    assert "".join(c.choices[0].text for c in chunks) == full.choices[0].text
    assert chunks[-1].choices[0].finish_reason == "length"


def test_stream_ends_with_done(served):
    body = {"model": served.model, "prompt": PROMPT, "max_tokens": 3, "stream": True}
    with httpx.stream("POST", f"{served.url}/v1/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"


def _stop_candidate(text: str) -> str:
    """A short plain-ASCII piece of `text` that is not at its very start."""
    for match in re.finditer(r"[A-Za-z0-9 ]{3}", text):
        if match.start() >= 2:
            return match.group(0)
    pytest.skip(f"no plain-ASCII stop candidate in {text!r}")


@pytest.mark.parametrize("stream", [False, True])
def test_stop_strings_cut_exactly(served, client, stream):
    params = {"model": served.model, "prompt": PROMPT, **LONG, "max_tokens": 40}
    text = client.completions.create(**params).choices[0].text
    stop = _stop_candidate(text)
    expected = text[: text.index(stop)]
    if stream:
        chunks = list(client.completions.create(**params, stop=[stop, "\x07never"], stream=True))
        got, reason = (
            "".join(c.choices[0].text for c in chunks),
            chunks[-1].choices[0].finish_reason,
        )
    else:
        choice = client.completions.create(**params, stop=stop).choices[0]
        got, reason = choice.text, choice.finish_reason
    assert (got, reason) == (expected, "stop")


def test_stop_token_ids(served, client):
    base = client.completions.create(model=served.model, prompt=PROMPT, logprobs=0, **LONG)
    tokens = [served.engine.tokenizer.token_to_id(t) for t in base.choices[0].logprobs.tokens]
    stop_id = next((t for t in tokens[2:] if t is not None), None)
    if stop_id is None:
        pytest.skip("no token id recoverable from the logprobs tokens")
    out = client.completions.create(
        model=served.model,
        prompt=PROMPT,
        **{**LONG, "extra_body": {"ignore_eos": True, "stop_token_ids": [stop_id]}},
    )
    assert out.choices[0].finish_reason == "stop"
    assert out.usage.completion_tokens == tokens.index(stop_id) + 1


def test_n_choices(served, client):
    params = dict(
        model=served.model,
        messages=MESSAGES,
        n=2,
        seed=3,
        temperature=1.0,
        max_tokens=8,
        extra_body={"ignore_eos": True},
    )
    out = client.chat.completions.create(**params)
    assert [c.index for c in out.choices] == [0, 1]
    assert out.choices[0].message.content != out.choices[1].message.content
    assert out.usage.completion_tokens == 16
    chunks = list(client.chat.completions.create(**params, stream=True))
    for index in (0, 1):
        text = "".join(
            c.choices[0].delta.content or "" for c in chunks if c.choices[0].index == index
        )
        assert text == out.choices[index].message.content


def test_seeded_sampling_is_reproducible(served, client):
    params = dict(
        model=served.model,
        prompt=PROMPT,
        max_tokens=16,
        temperature=1.0,
        top_p=0.9,
        presence_penalty=0.5,
        frequency_penalty=0.3,
        extra_body={"top_k": 50, "min_p": 0.01, "repetition_penalty": 1.1},
    )
    a = client.completions.create(**params, seed=1234).choices[0].text
    b = client.completions.create(**params, seed=1234).choices[0].text
    c = client.completions.create(**params, seed=4321).choices[0].text
    assert a == b != c


def test_logit_bias_forces_a_token(served, client):
    token = served.engine.tokenizer.token_to_id("Paris") or 100
    out = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        max_tokens=3,
        logit_bias={str(token): 100},
        logprobs=True,
        top_logprobs=3,
        extra_body={"ignore_eos": True},
    )
    content = out.choices[0].logprobs.content
    assert len(content) == 3 and all(len(entry.top_logprobs) == 3 for entry in content)
    assert served.engine.tokenizer.decode([token]) * 3 == out.choices[0].message.content


def test_max_completion_tokens(served, client):
    out = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        max_completion_tokens=5,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    assert out.usage.completion_tokens == 5


def test_batch_of_prompts(served, client):
    out = client.completions.create(model=served.model, prompt=[PROMPT, "hello world"], n=2, **LONG)
    assert [c.index for c in out.choices] == [0, 1, 2, 3]
    assert out.choices[0].text == out.choices[1].text != out.choices[2].text
