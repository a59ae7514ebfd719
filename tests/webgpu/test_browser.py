"""End to end in headless Chromium (WebGPU on SwiftShader): `mlcx web` serves a tiny f32
artifact, the test types a prompt into the demo and compares the streamed greedy tokens with
the Python wgpu backend's for the same chat prompt."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlcx.errors import ToolchainError
from mlcx.runtime.llm import LLM
from mlcx.runtime.sampling_params import SamplingParams
from mlcx.web.browser import chromium_path

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
PROMPT = "The capital of France is"
MAX_TOKENS = 12


def _setup(script: str) -> str | None:
    result = subprocess.run([str(ROOT / "scripts" / script)], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stderr or result.stdout).strip()[-300:]


@pytest.fixture(scope="module")
def browser_ready():
    pytest.importorskip("playwright", reason="pip install 'mlcx[web]' (Playwright drives Chromium)")
    try:
        chromium_path()
    except ToolchainError:
        if error := _setup("setup-system.sh"):
            pytest.skip(f"Chromium missing and scripts/setup-system.sh failed: {error}")
    if error := _setup("setup-web.sh"):
        pytest.skip(f"scripts/setup-web.sh (npm ci) failed: {error}")


@pytest.fixture(scope="module")
def served(browser_ready, webgpu_artifact):
    artifact = webgpu_artifact("q0f32")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlcx.cli.main", "web", str(artifact), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if match is None:
        proc.kill()
        pytest.fail(f"mlcx web printed {line!r}; stderr: {proc.stderr.read()}")
    yield artifact, match.group(0)
    proc.terminate()
    proc.wait(timeout=10)


def test_streamed_greedy_tokens_equal_the_python_backend(served, tmp_path):
    from mlcx.web.browser import browser_page, wait_ready

    artifact, url = served
    with browser_page(url) as page:
        wait_ready(page)
        assert "swiftshader" in page.inner_text("#model").lower()
        page.fill("#max-tokens", str(MAX_TOKENS))
        page.fill("#temperature", "0")
        page.fill("#prompt", PROMPT)
        page.click("#send")
        page.wait_for_function("document.body.dataset.state === 'generating'")
        page.wait_for_function("document.body.dataset.state !== 'generating'")
        reply = page.evaluate("window.mlcx.lastReply")
        shown = page.inner_text(".msg.assistant")
        page.screenshot(path=str(tmp_path / "demo.png"))
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    [[want]] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))
    assert reply["promptIds"] == prompt_ids
    assert reply["tokenIds"] == want.token_ids
    assert reply["text"] == want.text and "tok/s" in shown
    assert reply["stats"]["tokPerS"] > 0
