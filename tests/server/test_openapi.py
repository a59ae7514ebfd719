"""/openapi.json says what the server does: every error is an OpenAI error envelope under the
status the server really sends (never FastAPI's 422), and /metrics is Prometheus text."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import httpx
import pytest

from mlcx.runtime.core.engine import Engine
from mlcx.server.app import create_app
from mlcx.server.config import ServerConfig
from tests.server.conftest import serving
from tests.server.test_bad_input import envelope
from tests.support.live_server import live_server

ENVELOPE = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
USER = [{"role": "user", "content": "hi"}]


def openapi(url: str, **headers: str) -> dict:
    response = httpx.get(f"{url}/openapi.json", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def documented(spec: dict, path: str, method: str = "post") -> dict:
    return spec["paths"][path][method]["responses"]


def refs(node) -> Iterator[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def test_every_error_response_is_the_envelope_and_none_is_422(served):
    spec = openapi(served.url)
    assert "HTTPValidationError" not in json.dumps(spec)
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "422" not in responses, (path, method)
            assert responses["default"]["content"] == ENVELOPE, (path, method)
            for status, response in responses.items():
                health_503 = (path, status) == ("/health", "503")  # the health body, on purpose
                if status.startswith(("4", "5")) and not health_503:
                    assert response["content"] == ENVELOPE, (path, method, status)
    schemas = spec["components"]["schemas"]
    assert set(schemas["ErrorDetail"]["properties"]) == {"message", "type", "param", "code"}
    assert schemas["ErrorEnvelope"]["required"] == ["error"]
    assert {r.removeprefix("#/components/schemas/") for r in refs(spec)} <= set(schemas)


def test_generation_routes_document_their_statuses(served):
    spec = openapi(served.url)
    for path in (CHAT, COMPLETIONS):
        responses = documented(spec, path)
        assert {"200", "400", "403", "404", "413", "503"} <= set(responses)
        assert "401" not in responses  # no API key configured
        assert set(responses["200"]["content"]) == {"application/json", "text/event-stream"}


def test_metrics_are_documented_as_prometheus_text(served):
    spec = openapi(served.url)
    [media_type] = documented(spec, "/metrics", "get")["200"]["content"]
    assert media_type.startswith("text/plain")
    assert httpx.get(f"{served.url}/metrics").headers["content-type"] == media_type


BAD = {
    "schema-validation": (CHAT, {"messages": USER, "temperature": "hot"}, {}, 400),
    "runtime-validation": (CHAT, {"messages": USER, "top_p": 0}, {}, 400),
    "context-window": (CHAT, {"messages": USER, "max_tokens": 10**6}, {}, 400),
    "unknown-model": (COMPLETIONS, {"prompt": "hi", "model": "gpt-9"}, {}, 404),
    "non-local-host": (CHAT, {"messages": USER}, {"host": "evil.example"}, 403),
}


@pytest.mark.parametrize("case", BAD)
def test_a_real_error_status_is_documented(served, case):
    path, body, headers, status = BAD[case]
    response = httpx.post(served.url + path, json={"model": served.model, **body}, headers=headers)
    assert response.status_code == status, response.text
    envelope(response)
    assert str(status) in documented(openapi(served.url), path)


def test_api_key_401_is_documented_where_it_is_required(artifact):
    with serving(artifact, config=ServerConfig(api_key="secret")) as s:
        spec = openapi(s.url, authorization="Bearer secret")
        response = httpx.post(f"{s.url}{CHAT}", json={"model": s.model, "messages": USER})
        assert response.status_code == 401 and envelope(response)["code"] == "invalid_api_key"
        assert "401" in documented(spec, CHAT) and "401" in documented(spec, "/metrics", "get")
        assert "401" not in documented(spec, "/v1/models", "get")  # open without a key


def test_503_while_loading_is_documented(artifact):
    release = threading.Event()

    def slow_loader() -> Engine:
        release.wait(10)
        return Engine(artifact)

    with live_server(create_app(slow_loader)) as url:
        response = httpx.post(f"{url}{COMPLETIONS}", json={"model": "m", "prompt": "hi"})
        assert response.status_code == 503 and envelope(response)["code"] == "model_loading"
        assert "503" in documented(openapi(url), COMPLETIONS)
        release.set()
