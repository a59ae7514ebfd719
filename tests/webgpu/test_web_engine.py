"""The library's engine API end to end in headless Chromium (WebGPU on SwiftShader): a page on
`mlcx web`'s origin imports `/mlcx-web/index.js` as any web app would, loads the compiled tiny
model with `CreateMLCEngine("/artifact/")` and asks it OpenAI-shaped questions, then once more
through a worker engine (`CreateWebWorkerMLCEngine`, the handler in a module Web Worker), and
from the artifact's folder picked in a file input (`files`). The request logic itself is
tested under node on a fake model (web/test/engine.test.mjs)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams

pytestmark = pytest.mark.browser
PROMPT = "The capital of France is"
MAX_TOKENS = 12
SCHEMA = {  # bounded, so that the random-weight model closes it
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}, "ok": {"type": "boolean"}},
    "required": ["n", "ok"],
    "additionalProperties": False,
}

SCENARIOS = Path(__file__).parent / "js" / "engine_scenarios.js"
LOCAL_FILES = Path(__file__).parent / "js" / "local_files_scenario.js"
PICKER = """() => {
  const input = Object.assign(document.createElement("input"), { type: "file", id: "pick" });
  input.webkitdirectory = true;
  document.body.append(input);
}"""


def _artifact_blocker(page):
    """`window.blockArtifact(on)` in the page: while on, every request for /artifact/ fails
    (and is listed); returns the list."""
    blocking, refused = {"on": False}, []

    def route(r):
        if blocking["on"]:
            refused.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    page.route("**/artifact/**", route)
    page.expose_function("blockArtifact", lambda on: blocking.update(on=on))
    return refused


@pytest.fixture(scope="module")
def answers(browser_ready, webgpu_artifact):
    from mlcx.web.browser import browser_page
    from mlcx.web.server import serve_in_background, url_of

    artifact = webgpu_artifact("q0f32")
    server = serve_in_background(artifact)
    try:
        with browser_page(url_of(server) + "style.css") as page:
            refused = _artifact_blocker(page)
            args = {"PROMPT": PROMPT, "MAX_TOKENS": MAX_TOKENS}
            out = page.evaluate(SCENARIOS.read_text(), args | {"SCHEMA": SCHEMA})
            page.evaluate(PICKER)
            page.set_input_files("#pick", artifact)  # the folder, as a user picks it
            out["local"] = page.evaluate(LOCAL_FILES.read_text(), args)
            out["refused"] = refused
            return artifact, out
    finally:
        server.shutdown()


def test_a_whole_reply_is_openai_shaped_with_the_python_backend_s_tokens(answers):
    artifact, out = answers
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    [want] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))[0].outputs
    whole = out["whole"]
    assert whole["object"] == "chat.completion" and whole["prompt_token_ids"] == prompt_ids
    [choice] = whole["choices"]
    assert choice["token_ids"] == want.token_ids and choice["message"]["content"] == want.text
    assert choice["finish_reason"] == "length"
    usage = whole["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (len(prompt_ids), MAX_TOKENS)
    assert out["reports"] > 2 and out["lastProgress"] == 1


def test_a_stream_says_the_same_with_usage_last(answers):
    _, out = answers
    chunks = out["chunks"]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    text = "".join(c["choices"][0]["delta"]["content"] for c in chunks[:-1])
    assert text == out["whole"]["choices"][0]["message"]["content"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == MAX_TOKENS


def test_a_stop_string_cuts_the_reply(answers):
    _, out = answers
    text = out["whole"]["choices"][0]["message"]["content"]
    [choice] = out["stopped"]["choices"]
    assert choice["message"]["content"] == text[: text.index(out["stop"])]
    assert choice["finish_reason"] == "stop"


def test_a_follow_up_turn_reuses_the_cached_conversation(answers):
    _, out = answers
    details = out["followUp"]["usage"]["prompt_tokens_details"]
    assert details["cached_tokens"] >= 16  # the first turn's full pages


def test_an_interrupt_ends_the_stream_and_frees_its_pages(answers):
    _, out = answers
    chunks = out["interrupted"]
    assert len(chunks) == 4 and chunks[-1]["choices"][0]["finish_reason"] == "abort"
    assert out["kvAfterInterrupt"]["usedBlocks"] == 0


def test_concurrent_requests_do_not_interleave_and_long_prompts_are_refused(answers):
    _, out = answers
    assert out["order"] in ("aaaabbbb", "bbbbaaaa")
    assert out["tooLong"] == "ContextWindowSizeExceededError"


def test_the_worker_engine_answers_the_in_page_engine_s_tokens(answers):
    _, out = answers
    assert out["worker"]["choices"] == out["whole"]["choices"]
    assert out["worker"]["usage"]["completion_tokens"] == MAX_TOKENS


def test_the_worker_engine_constrains_its_output_to_a_json_schema(answers):
    _, out = answers
    [choice] = out["workerSchema"]["choices"]
    assert choice["finish_reason"] == "stop"
    jsonschema.validate(json.loads(choice["message"]["content"]), SCHEMA)


def test_the_cache_api_sees_and_drops_the_artifact(answers):
    _, out = answers
    assert out["cache"] == [True, False, True]  # loaded, deleted, loaded again by the worker


def test_a_lost_device_is_an_error_event_and_reload_continues_from_the_cache(answers):
    _, out = answers
    assert out["lost"] == ["DeviceLostError", "DeviceLostError"]
    assert out["afterReload"]["choices"] == out["whole"]["choices"]
    # the page's own probe was refused; the reload fetched nothing (config, plan, shaders,
    # tokenizer, weights all came from the browser's cache)
    assert out["probe"] == "TypeError"
    assert [url.rsplit("/", 1)[1] for url in out["refused"]] == ["mlcx-config.json"]


def test_an_artifact_picked_from_disk_answers_without_fetching_it(answers):
    _, out = answers
    assert out["local"]["fetched"] == []
    assert out["local"]["reply"]["choices"] == out["whole"]["choices"]
