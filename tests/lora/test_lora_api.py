"""A request picks an adapter by model "<model>:<adapter>" or the `lora` body field (with a
scale), alike over HTTP, in MLCEngine and in LLM; /v1/models lists the adapters."""

from __future__ import annotations

import httpx
import openai
import pytest

from mlcx import LLM, InvalidFieldError, MLCEngine, ModelNotFoundError
from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving

USER = [{"role": "user", "content": "hello there"}]
GREEDY = {"max_tokens": 10, "temperature": 0}


@pytest.fixture(scope="module")
def served(lora_artifact, adapters):
    pairs = tuple((name, str(path)) for name, path in adapters.items())
    with serving(lora_artifact, EngineConfig(lora=pairs)) as s:
        yield s


def _reply(client, model, **extra) -> str:
    out = client.chat.completions.create(model=model, messages=USER, **GREEDY, **extra)
    return out.choices[0].message.content


def test_models_lists_the_adapters(served):
    data = httpx.get(f"{served.url}/v1/models").json()["data"]
    assert [(m["id"], m.get("parent")) for m in data] == [
        (served.model, None),
        (f"{served.model}:a1", served.model),
        (f"{served.model}:a2", served.model),
    ]


def test_every_way_to_pick_an_adapter_agrees(served, lora_artifact, adapters):
    client = served.client(max_retries=0)
    by_model = _reply(client, f"{served.model}:a1")
    assert by_model == _reply(client, served.model, extra_body={"lora": "a1"})
    with MLCEngine(str(lora_artifact), lora=adapters) as engine:
        ours = engine.chat.completions.create(model=f"{served.model}:a1", messages=USER, **GREEDY)
    assert ours.choices[0].message.content == by_model
    llm = LLM(lora_artifact, lora=adapters)
    [out] = llm.chat(USER, llm.default_params(**GREEDY), lora_request="a1")
    assert out.outputs[0].content == by_model
    base, other = _reply(client, served.model), _reply(client, f"{served.model}:a2")
    assert len({base, by_model, other}) == 3


def test_a_scale_of_zero_is_the_base_model(served):
    client = served.client(max_retries=0)
    off = {"lora": {"name": "a1", "scale": 0.0}}
    assert _reply(client, served.model, extra_body=off) == _reply(client, served.model)


def test_unknown_adapters_are_404_and_a_conflict_400(served):
    client = served.client(max_retries=0)
    with pytest.raises(openai.NotFoundError, match="a1', 'a2'"):
        _reply(client, f"{served.model}:zz")
    with pytest.raises(openai.NotFoundError) as missing:
        _reply(client, served.model, extra_body={"lora": "zz"})
    assert missing.value.body["param"] == "lora"
    with pytest.raises(openai.BadRequestError, match="give one of them"):
        _reply(client, f"{served.model}:a1", extra_body={"lora": "a2"})


def test_in_process_errors_match(lora_artifact, adapters):
    with MLCEngine(str(lora_artifact), lora=adapters) as engine:
        name = engine.async_engine.models_served.name
        with pytest.raises(ModelNotFoundError):
            engine.chat.completions.create(model=f"{name}:zz", messages=USER)
        with pytest.raises(InvalidFieldError, match="must be finite"):
            engine.chat.completions.create(
                messages=USER, extra_body={"lora": {"name": "a1", "scale": float("inf")}}
            )
