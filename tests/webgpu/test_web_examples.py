"""WebLLM's own examples on mlcx-web, in headless Chromium (WebGPU on SwiftShader): each one
written from WebLLM's documented calls (tests/webgpu/js/webllm_examples/, one file an example,
its header saying what differs: the import line, the model id, a max_tokens where the example
has none, as a random model may never stop) runs to its final output against a real `mlcx web`
serving the tiny test model (with a 2048-token window, as
"tiny-llm", and again as "tiny-llm-2") and a tiny BERT embedding model ("tiny-bert"). Model ids
resolve through mlcx web's prebuiltAppConfig or an appConfig the example passes. Every example
runs in one page, one after another, each within a deadline (harness.js), so nothing waits
unbounded; the checks here hold their outputs to the Python backend and to the examples' own
claims."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from tests.support.tiny_models import TinySpec

pytestmark = pytest.mark.browser
EXAMPLES = Path(__file__).parent / "js" / "webllm_examples"
RUN = [  # in-page engines first (one device, the kernels compiled once), then the workers (each
    # its own, as WebLLM's examples create them)
    "get_started", "multi_round_chat", "json_mode", "json_schema", "seed_to_reproduce",
    "function_calling_openai", "streaming", "text_completion", "abort_reload", "logit_processor",
    "integrity_verification", "cache_usage", "embeddings", "get_started_web_worker",
    "multi_models", "service_worker",
]  # fmt: skip
DEADLINE_S = 420  # per example; the whole page's wait is bounded by their sum
CONTENT_TYPES = {".js": "text/javascript", ".html": "text/html"}
# a window for the function-calling example's tool prompt (603 tokens in the tiny vocabulary);
# test_web_structured.py's spec, so the session compiles it once
SPEC = TinySpec(context=2048)
SCHEMA1 = (EXAMPLES / "json_schema.js").read_text().split("SCHEMA1 = `", 1)[1].split("`", 1)[0]


@pytest.fixture(scope="module")
def served(browser_ready, webgpu_artifact, webgpu_embedding, tmp_path_factory):
    """`mlcx web tiny-llm tiny-llm-2 tiny-bert` (links named as the model ids the examples use).
    Both artifacts are the session's: the LLM test_web_structured.py's, the BERT the wgpu
    embeddings test's."""
    from tests.webgpu.conftest import start_mlcx_web

    artifacts = {"tiny-llm": webgpu_artifact("q0f32", SPEC), "tiny-bert": webgpu_embedding("bert")}
    root = tmp_path_factory.mktemp("webllm-examples")
    links = []
    for name in ("tiny-llm", "tiny-llm-2", "tiny-bert"):
        (root / name).symlink_to(artifacts[name.removesuffix("-2")], target_is_directory=True)
        links.append(root / name)
    proc, url = start_mlcx_web(*links)
    yield url, artifacts
    proc.terminate()
    proc.wait(timeout=10)


def _route_examples(route):
    path = EXAMPLES / route.request.url.split("/examples/", 1)[1].split("?", 1)[0]
    if not path.is_file() or path.parent != EXAMPLES:
        return route.fulfill(status=404)
    route.fulfill(body=path.read_text(), content_type=CONTENT_TYPES[path.suffix])


@pytest.fixture(scope="module")
def results(served):
    from mlcx.web.browser import browser_page

    url, artifacts = served
    budget_ms = DEADLINE_S * 1000
    with browser_page(url + "style.css", timeout_s=DEADLINE_S * len(RUN) + 60) as page:
        page.context.route("**/examples/**", _route_examples)
        started = time.perf_counter()
        page.goto(f"{url}examples/page.html?run={','.join(RUN)}&deadline={budget_ms}")
        page.wait_for_function("document.body.dataset.state === 'done'", polling=500)
        out = page.evaluate("window.exampleResults")
        out["_wall_s"] = time.perf_counter() - started
        out["_console"] = page.mlcx_console[-40:]
    return out, artifacts


def _ok(results, name) -> dict:
    out, _ = results
    result = out[name]
    assert result["ok"], f"{name}: {result.get('error')}\n" + "\n".join(out["_console"])
    return result["output"]


def test_every_example_runs_to_its_final_output(results):
    out, _ = results
    times = {name: round(out[name]["seconds"], 1) for name in RUN}
    print(f"\nWebLLM examples on SwiftShader (s): {json.dumps(times)}, page {out['_wall_s']:.0f} s")
    assert [name for name in RUN if not out[name]["ok"]] == []


def test_get_started_honours_its_request(results):
    reply = _ok(results, "get_started")["reply0"]
    assert [c["index"] for c in reply["choices"]] == [0, 1, 2]
    for choice in reply["choices"]:
        assert not {46, 71} & set(choice["token_ids"])  # logit_bias -100
        assert len(choice["logprobs"]["content"]) == len(choice["token_ids"]) <= 256
        assert all(len(e["top_logprobs"]) == 2 for e in choice["logprobs"]["content"])
    counted = sum(len(c["token_ids"]) for c in reply["choices"])
    assert reply["usage"]["completion_tokens"] == counted


def _chat_prompt_length(artifact, messages) -> int:
    return len(LLM(str(artifact)).chat_prompt(messages))


def test_multi_round_chat_prefills_only_the_new_turn(results):
    out = _ok(results, "multi_round_chat")
    _, artifacts = results
    first, second = out["reply0"], out["reply1"]
    assert out["replyMessage0"] == first["choices"][0]["message"]["content"]
    assert out["replyMessage1"] == second["choices"][0]["message"]["content"]
    usage = second["usage"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert cached >= 16 and usage["prompt_tokens"] + cached == usage["extra"]["prompt_tokens_total"]
    assert usage["prompt_tokens"] < first["usage"]["prompt_tokens"]
    system = (
        "You are a helpful, respectful and honest assistant. "
        "Be as happy as you can when speaking please. "
    )
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Provide me three US states."},
    ]
    assert first["usage"]["prompt_tokens"] == _chat_prompt_length(artifacts["tiny-llm"], messages)


def test_json_mode_and_json_schema_replies_parse_when_complete(results):
    out = _ok(results, "json_mode")
    choices = out["reply0"]["choices"]
    assert len(choices) == 2 and out["message"] == choices[1]["message"]["content"]
    for choice in choices:
        if choice["finish_reason"] == "stop":
            assert isinstance(json.loads(choice["message"]["content"]), dict)
    schema = _ok(results, "json_schema")
    for case, raw in (("simple", SCHEMA1), ("harry", None)):
        [choice] = schema[case]["reply"]["choices"]
        assert schema[case]["output"] == choice["message"]["content"]
        if choice["finish_reason"] == "stop" and raw:
            jsonschema.validate(json.loads(choice["message"]["content"]), json.loads(raw))


def test_a_seed_reproduces_every_choice(results):
    out = _ok(results, "seed_to_reproduce")  # the example checks the contents itself
    assert out["reply0"]["choices"] == out["reply1"]["choices"]
    assert len({c["message"]["content"] for c in out["reply0"]["choices"]}) > 1


def test_streamed_tool_calls_come_whole_on_the_last_chunk(results):
    out = _ok(results, "function_calling_openai")
    assert out["auto"]["usage"]["completion_tokens"] > 0
    last = out["forced"]["lastChunk"]["choices"][0]
    [call] = last["delta"]["tool_calls"]
    assert call["index"] == 0 and re.fullmatch(r"call_[0-9a-f]{24}", call["id"])
    assert call["type"] == "function" and call["function"]["name"] == "get_current_weather"
    assert last["finish_reason"] in ("tool_calls", "length")
    if last["finish_reason"] == "tool_calls":
        parameters = {"type": "object", "required": ["location"]}
        jsonschema.validate(json.loads(call["function"]["arguments"]), parameters)


def test_streaming_get_message_is_the_streamed_text(results):
    out = _ok(results, "streaming")
    assert out["finalMessage"] == out["message"]
    content = [c for c in out["chunks"] if c["choices"] and c["choices"][0]["logprobs"]]
    assert content and all(
        len(e["top_logprobs"]) == 2 for c in content for e in c["choices"][0]["logprobs"]["content"]
    )
    assert (
        out["chunks"][-1]["choices"] == [] and out["chunks"][-1]["usage"]["completion_tokens"] > 0
    )


def test_text_completion_echoes_its_prompt(results):
    choices = _ok(results, "text_completion")["reply0"]["choices"]
    assert len(choices) == 2
    assert all(c["text"].startswith("List 3 US states: ") for c in choices)


def test_unload_aborts_a_running_load(results):
    out = _ok(results, "abort_reload")
    assert out["reports"] and not any(r["afterUnload"] for r in out["reports"])
    assert "ready" not in [r["text"] for r in out["reports"]]
    assert out["afterAbort"] == "EngineNotLoadedError"
    assert out["reply"]["choices"][0]["finish_reason"] in ("stop", "length")


def test_logit_processor_steers_forward_tokens_and_sample(results):
    out = _ok(results, "logit_processor")
    assert out["runs"] == [[0] * 8, [0] * 8] and out["resets"] == 1 and out["sequence"] == [0] * 8
    assert re.fullmatch(r"prefill: [\d.]+ tokens/sec, decoding: [\d.]+ tokens/sec", out["stats"])


def test_integrity_checks_refuse_a_wrong_hash(results):
    out = _ok(results, "integrity_verification")
    assert out["right"] == {"loaded": True, "finish": out["right"]["finish"]}
    wrong = out["wrong"]
    assert not wrong["loaded"] and wrong["url"].endswith("/artifacts/tiny-llm/mlcx-config.json")
    assert wrong["expected"] == out["wrongHash"] and wrong["actual"].startswith("sha256-")
    assert out["warned"]["loaded"]


def test_cache_usage_replies_are_the_python_backend_s(results):
    out = _ok(results, "cache_usage")
    _, artifacts = results
    assert out["cached"] == [True, False, True]
    llm = LLM(str(artifacts["tiny-llm"]))
    content = "Write an analogy between mathematics and a lighthouse."
    prompt = llm.chat_prompt([{"role": "user", "content": content}])
    [want] = llm.generate([prompt], SamplingParams.greedy(max_tokens=16))[0].outputs
    assert [r["choices"][0]["message"]["content"] for r in out["replies"]] == [want.text] * 3


def test_embeddings_are_the_python_embedder_s(results):
    from mlcx.runtime.api.embedder import Embedder

    out = _ok(results, "embeddings")
    _, artifacts = results
    embedder = Embedder(artifacts["tiny-bert"])
    api = out["api"]
    docs = np.array([d["embedding"] for d in api["docReply"]["data"]])
    queries = np.array([d["embedding"] for d in api["queryReply"]["data"]])
    texts = _js_strings("documents_og"), _js_strings("queries_og")
    prefix = "Represent this sentence for searching relevant passages: "
    want_docs = embedder.embed([f"[CLS] {t} [SEP]" for t in texts[0]])
    want_queries = embedder.embed([f"[CLS] {prefix}{t} [SEP]" for t in texts[1]])
    np.testing.assert_allclose(docs, want_docs, atol=1e-4)
    np.testing.assert_allclose(queries, want_queries, atol=1e-4)
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(api["similarity"], unit(want_queries) @ unit(want_docs).T, atol=1e-4)
    assert api["docReply"]["usage"]["prompt_tokens"] == sum(
        len(embedder.encode(f"[CLS] {t} [SEP]")) for t in texts[0]
    )
    assert out["rag"]["reply"]["model"] == "tiny-llm" and out["rag"]["stored"] == 64


def _js_strings(name: str) -> list[str]:
    source = (EXAMPLES / "embeddings.js").read_text()
    return json.loads(source.split(f"const {name} = ", 1)[1].split(";", 1)[0])


def test_the_worker_engine_streams_and_has_the_page_engine_s_methods(results):
    out = _ok(results, "get_started_web_worker")
    assert out["finalMessage"] == out["message"] and out["usage"]["completion_tokens"] <= 256
    assert out["methods"] == out["pageMethods"] and "getMessage" in out["methods"]


def test_two_models_in_one_worker_engine(results):
    out = _ok(results, "multi_models")
    for run, messages in (("sequential", "sequentialMessages"), ("parallel", "parallelMessages")):
        assert [r["message"] for r in out[run]] == out[messages]
    assert out["unnamed"] == "UnclearModelToUseError"


def test_the_service_worker_engine_streams(results):
    out = _ok(results, "service_worker")
    assert out["finalMessage"] == out["message"] and out["usage"]["completion_tokens"] <= 256
