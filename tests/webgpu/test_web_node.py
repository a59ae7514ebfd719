"""The browser runtime's logic, as node's test runner checks it: the phone decisions and the
downloader (web/test/device_fit.test.mjs, download.test.mjs), the engine API on a fake model
(engine.test.mjs), tool calls on a scripted model (tools.test.mjs), grammars enforced with
XGrammar's WASM (structured.test.mjs), the worker halves
(worker.test.mjs), a picked folder as the artifact (local_files.test.mjs), and the sampler,
stop strings, KV manager, tool-call parser and embedding batches against the Python runtime's
vectors (vectors.test.mjs), image preprocessing against Pillow's (images.test.mjs; Qwen-VL's
layout, encoder inputs and M-RoPE positions: qwen_vl.test.mjs), reply formats
(reasoning, harmony calls) against the Python parsers' (reasoning.test.mjs), WebLLM's semantics
(webllm_api.test.mjs) and one method list on every engine host (engine_methods.test.mjs). Each
node test is one pytest case, so a failure names it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

WEB_TEST = Path(__file__).resolve().parents[2] / "web" / "test"
FILES = (
    "device_fit.test.mjs",
    "download.test.mjs",
    "engine.test.mjs",
    "tools.test.mjs",
    "structured.test.mjs",
    "vectors.test.mjs",
    "images.test.mjs",
    "qwen_vl.test.mjs",
    "worker.test.mjs",
    "local_files.test.mjs",
    "webllm_api.test.mjs",
    "engine_methods.test.mjs",
    "reasoning.test.mjs",
)


@pytest.fixture(scope="module")
def results() -> dict[str, bool]:
    if shutil.which("node") is None:
        pytest.skip("Node.js is missing: run scripts/setup-web.sh")
    out = subprocess.run(
        ["node", "--test", "--test-reporter=tap", *(str(WEB_TEST / f) for f in FILES)],
        capture_output=True,
        text=True,
    )
    found = re.findall(r"^(not ok|ok) \d+ - (.+)$", out.stdout, re.MULTILINE)
    return {name: status == "ok" for status, name in found}


def test_every_node_test_passes(results):
    assert len(results) >= 46
    assert [name for name, ok in results.items() if not ok] == []


@pytest.mark.parametrize(
    "name",
    [
        "the f32 variant on an adapter without shader-f16, naming what it fell back from",
        "fewer pages when the budget is short",
        "a dropped connection resumes from the bytes received",
        "a body that ends early resumes when the size is known",
        "bytes from an earlier session are continued, not fetched again",
        "sampler: top_k and top_p",
        "image preprocessing: tall, bicubic, imagenet",
        "an image for a text-only model, or a URL that is not data:, is refused naming its part",
        "kv manager: image spans, two images, then text",
        "image preprocessing: idefics3 tiles and the global image",
        "sampler: presence and frequency",
        "sampler: logprobs",
        "stop strings: split across deltas",
        "kv manager: prefix reuse and eviction order",
        "tool calls: one call, split",
        "a named tool call, whole: tool_calls, null content, finish_reason tool_calls",
        "two concurrent streams do not interleave",
        "an interrupt mid-stream ends it with finish_reason abort and frees its pages",
        "a grammar reply matches it and ends when the grammar is complete",
        "what XGrammar refuses, and malformed formats, are refused by name",
        "every engine host has exactly the page engine's methods",
        "the engine methods are WebLLM's MLCEngineInterface and kvUsage",
        "usage as WebLLM counts it: prompt_tokens is what this turn prefilled",
        "unload() during a load aborts it: the load resolves, no model is loaded, progress stops",
        "forwardTokensAndSample feeds a sequence token by token until resetChat",
        "embedding batches: the Python Embedder's grouping and EmbedBatch's arrays",
        "an extension service worker engine answers over a port and keeps its model across popups",
    ],
)
def test_phone_behaviour(results, name):
    assert results.get(name) is True, name
