"""POST /v1/embeddings through the real app on a free port, with the real `openai` client:
float and base64 vectors equal LLM.embed's, Matryoshka `dimensions`, usage; bad inputs get
400 with the OpenAI error envelope; generation routes and embeddings refuse each other's model.
The app loads the model as `mlcx serve` does (its served_model, in the background)."""

from __future__ import annotations

import base64
import time

import httpx
import numpy as np
import openai
import pytest

from mlcx.artifact.embedding_config import EmbeddingArtifact
from mlcx.cli.serve_cmd import served_model
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.server.app import create_app
from tests.support.live_server import live_server

TEXTS = ["hello world", "The capital of France is Paris.", "x"]


def _wait_ready(url: str) -> None:
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/health").status_code != 200:
        assert time.monotonic() < deadline, "the embedding model did not load"
        time.sleep(0.05)


@pytest.fixture(scope="module", params=["qwen3", "bert"])
def server(request, embedding_model):
    _, artifact = embedding_model(request.param)
    app = create_app(lambda: served_model(EmbeddingArtifact(artifact), EngineConfig()))
    with live_server(app) as url:
        _wait_ready(url)
        yield url, artifact, request.param


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)


def _name(url: str) -> str:
    return httpx.get(f"{url}/v1/models").json()["data"][0]["id"]


def _vector(embedding) -> np.ndarray:
    if isinstance(embedding, str):  # base64 asked for by the caller: the client leaves it
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4")
    return np.array(embedding, dtype=np.float32)


# None: the client asks for base64 itself and decodes it
@pytest.mark.parametrize("encoding", ["float", "base64", None])
def test_openai_client_gets_the_runtimes_vectors(server, encoding):
    url, artifact, _ = server
    given = {"encoding_format": encoding} if encoding else {}
    result = _client(url).embeddings.create(model=_name(url), input=TEXTS, **given)
    got = np.stack([_vector(d.embedding) for d in result.data])
    want = [out.outputs.embedding for out in LLM(artifact).embed(TEXTS)]
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert [d.index for d in result.data] == [0, 1, 2]
    assert result.model == _name(url)
    assert result.usage.prompt_tokens == result.usage.total_tokens > len(TEXTS)


def test_a_string_and_token_ids_are_inputs_too(server):
    url, artifact, _ = server
    client = _client(url)
    one = client.embeddings.create(model=_name(url), input="hello world")
    ids = LLM(artifact)._embedder.encode("hello world")
    by_ids = client.embeddings.create(model=_name(url), input=[ids])
    np.testing.assert_allclose(one.data[0].embedding, by_ids.data[0].embedding, atol=1e-6)
    assert one.usage.prompt_tokens == len(ids)


def test_dimensions_truncate_where_the_model_is_matryoshka(server):
    url, _, name = server
    client = _client(url)
    if name == "qwen3":
        result = client.embeddings.create(model=_name(url), input=TEXTS, dimensions=16)
        vectors = np.array([d.embedding for d in result.data])
        assert vectors.shape == (3, 16)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        too_many = 65
    else:
        too_many = 16  # BERT declares no Matryoshka training: any dimensions is refused
    with pytest.raises(openai.BadRequestError) as err:
        client.embeddings.create(model=_name(url), input=TEXTS, dimensions=too_many)
    assert err.value.body["param"] == "dimensions"


BAD = [
    ({"input": []}, "input"),
    ({"input": ""}, "input"),
    ({"input": ["fine", ""]}, "input"),
    ({"input": [[]]}, "input"),
    ({"input": " ".join(["hello"] * 80)}, "input"),  # past the model's 64 positions
    ({"input": [[10**6]]}, "input"),
    ({"input": 42}, "input"),
    ({"input": [1.5]}, "input"),
    ({"input": [["a"]]}, "input"),
    ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "a", "dimensions": "8"}, "dimensions"),
    ({}, "input"),
]


@pytest.mark.parametrize(("body", "param"), BAD, ids=[str(b)[:40] for b, _ in BAD])
def test_bad_inputs_get_400_with_the_envelope(server, body, param):
    url, _, _ = server
    response = httpx.post(f"{url}/v1/embeddings", json={"model": _name(url), **body})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    assert error["param"] == param


def test_models_health_and_metrics_answer(server):
    url, _, name = server
    assert _name(url) == name
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}
    assert httpx.get(f"{url}/metrics").status_code == 200


def test_chat_routes_refuse_an_embedding_model(server):
    url, _, _ = server
    with pytest.raises(openai.BadRequestError, match="embedding model"):
        _client(url).chat.completions.create(
            model=_name(url), messages=[{"role": "user", "content": "hi"}]
        )


def test_embeddings_refuse_a_chat_model(compiled):
    from mlcx.runtime.core.engine import Engine

    with (
        live_server(create_app(Engine(compiled()))) as url,
        pytest.raises(openai.BadRequestError, match="has no embeddings"),
    ):
        _client(url).embeddings.create(model=_name(url), input="hi")
