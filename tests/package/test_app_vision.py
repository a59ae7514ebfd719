"""`mlcx package --app both` of a model with images (the vision tests' tiny Gemma 3): dist/www
carries the WebGPU variant's image encoder beside its plan (the files `mlcx compile` wrote,
unchanged), its shards are bundled once under bundle/, and the app page on an iPhone-sized
touch screen offers an image picker and answers a picked image with the cpu artifact's greedy
tokens, as it does an image the native shells send through window.mlcx.chat. The browser's
cache queries (hasModelInCache, deleteModelInCache) cover the encoder's shards."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from urllib.parse import urljoin

import pytest

from tests.support.app_page import ORIGIN, page_url, phone_page

QUESTION = "what is this?"
MAX_TOKENS = 16
APP_URL = f"{ORIGIN}/www/mlcx-app.json"


def _model(dist: Path) -> dict:
    [model] = json.loads((dist / "www" / "mlcx-app.json").read_text())["models"]
    return model


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_encoder_goes_beside_its_plan_and_its_shards_once(vision_app_dist, webgpu_vision):
    model = _model(vision_app_dist)
    [variant] = model["variants"]
    assert model["images"] is True
    assert variant["vision_weights"] == "../bundle/gemma/q0f32/vision/params/"
    compiled = _files(webgpu_vision / "vision")
    shards = {name: data for name, data in compiled.items() if name.endswith(".bin")}
    small = {name: data for name, data in compiled.items() if name not in shards}
    assert shards and "encoder.json" in small and any(n.endswith(".wgsl") for n in small)
    # the page's files as compiled, the shards kept out of www/ and bundled byte for byte
    assert _files(vision_app_dist / "www" / variant["artifact"] / "vision") == small
    assert not list((vision_app_dist / "www").rglob("*.bin"))
    bundled = (vision_app_dist / "www" / variant["vision_weights"]).resolve()
    for name, data in shards.items():
        assert (bundled / Path(name).name).read_bytes() == data
    assert variant["vision_weights_bytes"] == sum(len(d) for d in shards.values())
    # the memory budget holds the encoder's weights besides the text model's
    assert model["estimated_memory_bytes"] > variant["weights_bytes"] + sum(
        len(d) for d in shards.values()
    )


# The browser's cache queries over the loaded app model: complete with the encoder's shards in
# their bundle folder; incomplete when they are looked for elsewhere or one is gone; gone after
# deleteModelInCache.
CACHE_SCENARIO = """async ({ base, shardsUrl, visionShardsUrl }) => {
  const lib = await import("/www/src/model_cache.js");
  const weights = await caches.open("mlcx-weights-v1");
  const visionKeys = async () =>
    (await weights.keys()).map((r) => r.url).filter((u) => u.includes("/vision/"));
  const options = { shardsUrl, visionShardsUrl };
  const out = { loaded: await lib.hasModelInCache(base, options),
                visionElsewhere: await lib.hasModelInCache(base, { shardsUrl }) };
  const [first] = await visionKeys();
  const bytes = await (await weights.match(first)).arrayBuffer();
  await weights.delete(first);
  out.lostVisionShard = await lib.hasModelInCache(base, options);
  await weights.put(first, new Response(bytes));
  out.restored = await lib.hasModelInCache(base, options);
  await lib.deleteModelInCache(base, options);
  out.visionKeysAfterDelete = await visionKeys();
  out.afterDelete = await lib.hasModelInCache(base, options);
  return out;
}"""


def _png(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def app_answers(vision_app_dist, browser_ready, photo, tmp_path_factory):
    from mlcx.web.browser import FLAGS, send_chat, wait_ready

    png = tmp_path_factory.mktemp("picked") / "photo.png"
    png.write_bytes(_png(photo))
    variant = _model(vision_app_dist)["variants"][0]
    base = urljoin(APP_URL, variant["artifact"])
    urls = {"base": base, "shardsUrl": urljoin(APP_URL, variant["weights"]),
            "visionShardsUrl": urljoin(APP_URL, variant["vision_weights"])}  # fmt: skip
    requested: list[str] = []
    with phone_page(vision_app_dist, page_url("gemma"), requested, FLAGS) as page:
        wait_ready(page)
        out = {"picker": page.is_visible("#image-pick"), "info": page.evaluate("window.mlcx.info")}
        page.set_input_files("#image", png)
        out["picked"], _ = send_chat(page, QUESTION, MAX_TOKENS)
        out["thumbnails"] = page.locator(".msg.user img").count()
        page.evaluate("window.mlcx.reset()")
        image = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
        options = {"image": image, "maxTokens": MAX_TOKENS}
        out["native"] = page.evaluate("([t, o]) => window.mlcx.chat(t, o)", [QUESTION, options])
        out["events"] = page.evaluate("window.mlcxEvents")
        out["cache"] = page.evaluate(CACHE_SCENARIO, urls)
    out["requested"] = requested
    return out


@pytest.fixture(scope="module")
def cpu_answer(vision_artifact, photo):
    """The cpu artifact's greedy reply to the question with the photo (the same tiny model)."""
    from mlcx.runtime.api.llm import LLM
    from mlcx.runtime.core.config import EngineConfig
    from mlcx.runtime.sample.params import SamplingParams

    llm = LLM(str(vision_artifact), EngineConfig(kv_blocks=64))
    parts = [{"type": "text", "text": QUESTION}, {"type": "image", "image": photo}]
    ids, images = llm.chat_inputs([{"role": "user", "content": parts}])
    params = SamplingParams.greedy(max_tokens=MAX_TOKENS)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    return ids, completion.token_ids


@pytest.mark.browser
def test_the_app_page_answers_a_picked_image_as_the_cpu_artifact(app_answers, cpu_answer):
    ids, want = cpu_answer
    assert app_answers["picker"] and app_answers["info"]["images"] is True
    picked = app_answers["picked"]
    assert picked["promptIds"] == ids and app_answers["thumbnails"] == 1
    assert picked["tokenIds"] == want and len(set(want)) > 4


@pytest.mark.browser
def test_an_image_from_the_native_shell_answers_the_same(app_answers, cpu_answer):
    ids, want = cpu_answer
    native = app_answers["native"]
    assert native["promptIds"] == ids and native["tokenIds"] == want
    [ready] = [e for e in app_answers["events"] if e["type"] == "ready"]
    assert ready["images"] is True  # what the shells show their image button on


@pytest.mark.browser
def test_the_encoder_shards_come_from_the_bundle(app_answers):
    requested = app_answers["requested"]
    assert "bundle/gemma/q0f32/vision/params/shard-00000.bin" in requested
    assert "www/models/gemma/q0f32/vision/encoder.json" in requested
    assert not any("vision/params/shard" in r for r in requested if r.startswith("www/"))


@pytest.mark.browser
def test_the_cache_queries_cover_the_encoder(app_answers):
    cache = app_answers["cache"]
    assert cache["loaded"] and cache["restored"]
    assert not cache["visionElsewhere"] and not cache["lostVisionShard"]
    assert cache["visionKeysAfterDelete"] == [] and not cache["afterDelete"]
