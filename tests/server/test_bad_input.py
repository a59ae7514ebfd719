"""Every bad request gets a 4xx/503 with the OpenAI error envelope: never a 422 or a traceback."""

from __future__ import annotations

import httpx
import openai
import pytest

from mlcx.runtime.core.config import EngineConfig
from mlcx.server import ServerConfig
from tests.server.conftest import serving

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
USER = [{"role": "user", "content": "hi"}]


def envelope(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert "Traceback" not in body["error"]["message"]
    return body["error"]


def chat(**fields):
    return CHAT, {"model": "MODEL", "messages": USER, **fields}


def completion(**fields):
    return COMPLETIONS, {"model": "MODEL", "prompt": "hello", **fields}


CASES = {
    "wrong-type-temperature": (chat(temperature="hot"), "temperature"),
    "wrong-type-max-tokens": (completion(max_tokens="ten"), "max_tokens"),
    "wrong-type-prompt": (completion(prompt=5), "prompt"),
    "wrong-type-stop": (completion(stop=[1]), "stop"),
    "wrong-type-messages": (chat(messages="hi"), "messages"),
    "wrong-type-n": (chat(n=1.5), "n"),
    "missing-model": ((CHAT, {"messages": USER}), "model"),
    "temperature-below-0": (chat(temperature=-0.5), "temperature"),
    "temperature-too-high": (completion(temperature=1000), "temperature"),
    "top-p-0": (chat(top_p=0), "top_p"),
    "top-p-above-1": (completion(top_p=1.5), "top_p"),
    "n-0": (chat(n=0), "n"),
    "n-too-many": (completion(n=100), "n"),
    "top-logprobs-too-many": (chat(logprobs=True, top_logprobs=50), "top_logprobs"),
    "top-logprobs-without-logprobs": (chat(top_logprobs=2), "top_logprobs"),
    "completion-logprobs-too-many": (completion(logprobs=50), "logprobs"),
    "max-tokens-0": (completion(max_tokens=0), "max_tokens"),
    "logit-bias-key-not-a-token-id": (chat(logit_bias={"abc": 1}), "logit_bias"),
    "logit-bias-key-outside-vocab": (chat(logit_bias={"99999": 1}), "logit_bias"),
    "logit-bias-value-too-big": (chat(logit_bias={"5": 500}), "logit_bias"),
    "empty-messages": (chat(messages=[]), "messages"),
    "unknown-role": (chat(messages=[{"role": "robot", "content": "x"}]), "messages.0.role"),
    "non-text-content": (
        chat(messages=[{"role": "user", "content": [{"type": "image_url"}]}]),
        "messages.0.content",
    ),
    "empty-stop-string": (completion(stop=[""]), "stop"),
    "stream-options-without-stream": (
        completion(stream_options={"include_usage": True}),
        "stream_options",
    ),
    "empty-prompt-list": (completion(prompt=[]), "prompt"),
    "prompt-token-outside-vocab": (completion(prompt=[1, 99999]), "prompt"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_field_is_400(served, case):
    (path, body), param = CASES[case]
    body = {**body, "model": served.model} if "model" in body else body
    response = httpx.post(served.url + path, json=body)
    assert response.status_code == 400, response.text
    error = envelope(response)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_malformed_json(served):
    response = httpx.post(
        served.url + CHAT,
        content=b'{"model": "x", "messages": [',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert "not valid JSON" in envelope(response)["message"]


def test_unknown_model_is_404(served):
    with pytest.raises(openai.NotFoundError) as caught:
        served.client(max_retries=0).chat.completions.create(model="gpt-9", messages=USER)
    assert caught.value.body["code"] == "model_not_found"
    assert caught.value.body["type"] == "invalid_request_error"


def test_unknown_path_is_404_envelope(served):
    response = httpx.get(served.url + "/v1/nothing")
    assert response.status_code == 404 and envelope(response)["type"] == "invalid_request_error"


def test_prompt_over_the_context_window(served):
    window = served.engine.context_window
    with pytest.raises(openai.BadRequestError) as caught:
        served.client(max_retries=0).completions.create(
            model=served.model, prompt=[5] * (window + 10)
        )
    body = caught.value.body
    assert body["code"] == "context_length_exceeded" and body["param"] == "prompt"
    assert f"{window + 10} tokens" in body["message"] and str(window) in body["message"]


def test_max_tokens_beyond_the_context_window(served):
    window = served.engine.context_window
    with pytest.raises(openai.BadRequestError) as caught:
        served.client(max_retries=0).chat.completions.create(
            model=served.model, messages=USER, max_tokens=window
        )
    body = caught.value.body
    assert body["code"] == "context_length_exceeded" and body["param"] == "max_tokens"
    assert f"max_tokens ({window})" in body["message"] and str(window) in body["message"]


def test_non_local_host_is_refused_on_loopback(served):
    response = httpx.get(served.url + "/v1/models", headers={"Host": "evil.example:8000"})
    assert response.status_code == 403
    assert envelope(response)["type"] == "permission_error"
    for host in ("localhost:1234", "127.0.0.1", "[::1]:80"):
        assert httpx.get(served.url + "/v1/models", headers={"Host": host}).status_code == 200


def test_api_key(artifact):
    with serving(artifact, config=ServerConfig(api_key="s3cret")) as s:
        model, url = s.model, s.url
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Api-Key": "s3cre"}):
            response = httpx.post(
                url + CHAT, json={"model": model, "messages": USER}, headers=headers
            )
            assert response.status_code == 401
            assert envelope(response)["code"] == "invalid_api_key"
        assert httpx.get(url + "/metrics").status_code == 401
        assert httpx.get(url + "/health").status_code == 200
        assert httpx.get(url + "/v1/models").status_code == 200
        with pytest.raises(openai.AuthenticationError):
            s.client(api_key="nope", max_retries=0).models.with_raw_response.retrieve(model)
        ok = s.client(api_key="s3cret").completions.create(model=model, prompt="hi", max_tokens=2)
        assert ok.usage.completion_tokens >= 1
        by_header = httpx.post(
            url + COMPLETIONS,
            json={"model": model, "prompt": "hi", "max_tokens": 1},
            headers={"X-Api-Key": "s3cret"},
        )
        assert by_header.status_code == 200


def test_cors_is_off_unless_an_origin_is_allowed(served, artifact):
    origin = {"Origin": "http://localhost:3000"}
    assert (
        "access-control-allow-origin"
        not in httpx.get(served.url + "/v1/models", headers=origin).headers
    )
    config = ServerConfig(api_key="k", allow_origins=("http://localhost:3000",))
    with serving(artifact, config=config) as s:
        preflight = httpx.options(
            s.url + CHAT,
            headers={
                **origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = httpx.get(s.url + "/v1/models", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_full_waiting_queue_is_503(artifact):
    engine_config = EngineConfig(max_batch=1, max_waiting=1)
    with serving(artifact, engine_config) as s:
        client = s.client(max_retries=0)
        long = dict(model=s.model, prompt="hi", max_tokens=200, extra_body={"ignore_eos": True})
        running = client.completions.create(**long, stream=True)
        next(iter(running))  # admitted and decoding
        waiting = client.completions.create(**long, stream=True)
        with pytest.raises(openai.APIStatusError) as caught:
            client.completions.create(model=s.model, prompt="hi", max_tokens=2)
        assert caught.value.status_code == 503
        assert caught.value.body["code"] == "queue_full"
        assert caught.value.body["type"] == "server_error"
        running.close()
        waiting.close()
        s.wait_idle()
        assert client.completions.create(model=s.model, prompt="hi", max_tokens=2).choices


def test_oversized_body_is_413(served):
    from mlcx.server.guards import MAX_BODY_BYTES

    response = httpx.post(
        served.url + COMPLETIONS,
        content=b" " * (MAX_BODY_BYTES + 1),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413
    assert envelope(response)["code"] == "body_too_large"
