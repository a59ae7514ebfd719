"""`mlcx package --app`: dist/www holds web/'s runtime unchanged and each model's WebGPU plans,
reads the weights from bundle/ (stored once), and runs in headless Chromium on an iPhone-sized
touch screen, served the way the app shells serve it: one custom https origin over the dist
folder. The replies are the CPU artifact's greedy tokens. SwiftShader has no shader-f16, so
the page must fall back from the q4f16 plan to the packaged q4f32 one by itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.app_page import answering, page_url, phone_page
from tests.support.tiny_models import TinySpec

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "The capital of France is"
MAX_TOKENS = 12


def _www_config(dist: Path) -> dict:
    return json.loads((dist / "www" / "mlcx-app.json").read_text())


def test_www_is_the_web_runtime_unchanged(app_dist):
    www = app_dist / "www"
    for path in (ROOT / "web" / "src").glob("*.js"):
        assert (www / "src" / path.name).read_bytes() == path.read_bytes(), path.name
    assert (www / "index.html").read_bytes() == (ROOT / "web" / "index.html").read_bytes()
    for lib in ("tokenizers/dist/tokenizers.mjs", "jinja/dist/index.js"):
        assert (www / "vendor" / "@huggingface" / lib).is_file()


def test_weights_are_stored_once(app_dist):
    [model] = _www_config(app_dist)["models"]
    f16, f32 = model["variants"]
    assert (f16["quantization"], f32["quantization"]) == ("q4f16", "q4f32")
    assert "shader-f16" in f16["features"] and "shader-f16" not in f32["features"]
    assert (
        f16["weights"] == "../bundle/tiny/params/"
        and f32["weights"] == "../bundle/tiny/q4f32/params/"
    )
    assert not list((app_dist / "www").rglob("*.bin"))
    for variant in (f16, f32):
        index = app_dist / "www" / variant["artifact"] / "params" / "index.json"
        shards_dir = (app_dist / "www" / variant["weights"]).resolve()
        shards = json.loads(index.read_text())["shards"]
        assert variant["weights_bytes"] == sum(s["nbytes"] for s in shards)
        assert all((shards_dir / s["file"]).stat().st_size == s["nbytes"] for s in shards)
    bundle = app_dist / "bundle" / "tiny" / "params" / "index.json"
    assert (
        bundle.read_text() == (app_dist / "www" / f16["artifact"] / "params/index.json").read_text()
    )


def test_a_text_model_has_no_image_encoder(app_dist):
    """A text-only model packages as before: no vision/ anywhere, and the shells are told."""
    [model] = _www_config(app_dist)["models"]
    assert model["images"] is False
    assert [(v["vision_weights"], v["vision_weights_bytes"]) for v in model["variants"]] == [
        (None, 0),
        (None, 0),
    ]
    assert not list(app_dist.rglob("vision"))


def _cpu_greedy(compiled, prompt: str):
    """The CPU artifact's greedy reply (same q4f32 weights) to the chat prompt."""
    from mlcx.runtime.api.llm import LLM
    from mlcx.runtime.sample.params import SamplingParams

    llm = LLM(str(compiled(TinySpec(), "q4f32")))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": prompt}])
    [want] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))[0].outputs
    return want


PAGE = page_url("tiny")


def _phone(dist: Path, requested: list[str], flags: tuple[str, ...], script: str = "", routes=None):
    """The tiny model's app page on an iPhone-sized touch screen serving the dist folder."""
    return phone_page(dist, PAGE, requested, flags, script, routes)


def _tap_send(page, text: str) -> dict:
    page.fill("#max-tokens", str(MAX_TOKENS))
    page.fill("#prompt", text)
    page.tap("#send")
    page.wait_for_function("document.body.dataset.state !== 'generating' && window.mlcx.lastReply")
    return page.evaluate("window.mlcx.lastReply")


@pytest.mark.browser
def test_phone_webview_answers_like_the_cpu_artifact(app_dist, browser_ready, compiled):
    from mlcx.artifact.config import Artifact
    from mlcx.web.browser import FLAGS, wait_ready

    requested: list[str] = []
    with _phone(app_dist, requested, FLAGS) as page:
        wait_ready(page)
        info = page.evaluate("window.mlcx.info")
        reply = _tap_send(page, PROMPT)
        shown = page.inner_text(".msg.assistant")
        events = page.evaluate("window.mlcxEvents")
        first_load = list(requested)
        page.reload()
        wait_ready(page)
        progress = page.inner_text("#progress")
    reference = Artifact(compiled(TinySpec(), "q4f32"))
    want = _cpu_greedy(compiled, PROMPT)
    assert reply["promptIds"] == list(want.prompt_token_ids)
    assert reply["tokenIds"] == want.token_ids and want.text in shown
    assert info["quantization"] == "q4f32" and info["note"].startswith("this GPU lacks shader-f16:")
    # the KV cache is what the model's memory budget leaves after the f32 weights
    [model] = _www_config(app_dist)["models"]
    spare = model["estimated_memory_bytes"] - model["variants"][1]["weights_bytes"]
    full = -(-reference.config.context_window // reference.config.page_size)
    assert info["kvBlocks"] == min(full, spare // reference.config.kv_block_bytes) < full
    # the native bridge saw the model become ready, then the reply token by token
    kinds = [e["type"] for e in events]
    assert kinds.index("ready") < kinds.index("token") and kinds[-1] == "done"
    tokens = [e for e in events if e["type"] == "token"]
    assert [e["token"] for e in tokens] == want.token_ids
    assert "".join(e["text"] for e in tokens) == want.text == events[-1]["text"]
    # weights from the bundle once, then from the Cache API
    shard = "bundle/tiny/q4f32/params/shard-00000.bin"
    assert shard in first_load and not any(r.startswith("bundle/tiny/params/") for r in first_load)
    assert shard not in requested[len(first_load) :] and "browser cache" in progress


# (flags without WebGPU, or a WebView without navigator.gpu) -> what the page must say
NO_WEBGPU = {
    "no adapter": (False, "", "no GPU adapter is available"),
    "no navigator.gpu": (True, "Object.defineProperty(Navigator.prototype, 'gpu', {get() {}});",
                         "has no WebGPU"),
}  # fmt: skip


@pytest.mark.browser
@pytest.mark.parametrize("case", sorted(NO_WEBGPU))
def test_no_webgpu_is_a_clear_message(app_dist, browser_ready, case):
    from mlcx.web.browser import FLAGS

    webgpu, script, says = NO_WEBGPU[case]
    flags = FLAGS if webgpu else tuple(f for f in FLAGS if "webgpu" not in f)
    with _phone(app_dist, [], flags, script) as page:
        page.wait_for_function("document.body.dataset.state === 'error'")
        message = page.inner_text("#error")
        events = page.evaluate("window.mlcxEvents")
    assert says in message and "iOS 26" in message
    assert events[-1] == {"type": "error", "message": message}


WEIGHTS = "https://weights.example.com/tiny/"


def _weights_server(shards: Path, ranges: list[str | None]):
    """A download server whose first answer ends halfway (the network went away) and which
    honours Range afterwards; CORS allows the app's origin."""

    @answering
    def handle(route):
        cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "Range"}
        if route.request.method == "OPTIONS":
            return route.fulfill(status=204, headers=cors)
        quantization, name = route.request.url.removeprefix(WEIGHTS).split("/")
        data = (shards / quantization / "params" / name).read_bytes()
        asked = route.request.headers.get("range")
        ranges.append(asked)
        if asked is None:
            return route.fulfill(status=200, body=data[: len(data) // 2], headers=cors)
        start = int(asked.removeprefix("bytes=").rstrip("-"))
        content_range = f"bytes {start}-{len(data) - 1}/{len(data)}"
        route.fulfill(
            status=206, body=data[start:], headers={**cors, "Content-Range": content_range}
        )

    return handle


@pytest.mark.browser
def test_downloaded_weights_resume_after_a_dropped_connection(
    app_dist, browser_ready, compiled, tmp_path
):
    """The app's weights are not bundled: the page downloads them, resumes with a Range
    request where the first answer stopped, checks the sha256 and answers."""
    import shutil

    from mlcx.web.browser import FLAGS, wait_ready

    dist = tmp_path / "dist"
    shutil.copytree(app_dist / "www", dist / "www")
    config = _www_config(dist)
    for variant in config["models"][0]["variants"]:
        variant.update(weights=f"{WEIGHTS}{variant['quantization']}/", weights_bundled=False)
    (dist / "www" / "mlcx-app.json").write_text(json.dumps(config))
    ranges: list[str | None] = []
    routes = {f"{WEIGHTS}**": _weights_server(app_dist / "bundle" / "tiny", ranges)}
    with _phone(dist, [], FLAGS, routes=routes) as page:
        wait_ready(page)
        reply = _tap_send(page, PROMPT)
    size = (app_dist / "bundle/tiny/q4f32/params/shard-00000.bin").stat().st_size
    assert ranges == [None, f"bytes={size // 2}-"]
    assert reply["tokenIds"] == _cpu_greedy(compiled, PROMPT).token_ids
