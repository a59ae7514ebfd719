"""The front door as a newcomer meets it (issue 24): the README's first command, run literally in
a fresh venv with no extras, answers; a built wheel installed into another fresh venv serves the
openai client, the browser demo and the app shells — with no checkout and no npm.

Slow (about 4 minutes): two venvs installed from pip's cache, the default model compiled once.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.fresh_venv import FreshVenv
from tests.support.tiny_models import TinySpec

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is the capital of France?"


def readme_first_command() -> str:
    """The first line of the README's first code block, exactly as a reader copies it."""
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md has no code block"
    return block.group(1).splitlines()[0]


@pytest.fixture(scope="module")
def mlcx_cache(tmp_path_factory) -> Path:
    """One new mlcx cache for both venvs: the model fetched and compiled by the README command
    is what the wheel's `mlcx serve` loads."""
    return tmp_path_factory.mktemp("fresh-mlcx-cache")


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory, mlcx_cache):
    venv = FreshVenv.create(
        tmp_path_factory.mktemp("readme") / "v", env={"MLCX_CACHE": str(mlcx_cache)}
    )
    return venv.shell(readme_first_command(), cwd=ROOT)


def test_readme_first_command_answers_in_a_fresh_venv(readme_run):
    assert readme_run.returncode == 0, readme_run.stderr[-3000:]
    assert "Paris" in readme_run.stdout


@pytest.fixture(scope="module")
def npm_shim(tmp_path_factory) -> tuple[Path, Path]:
    """A bin/ whose npm and npx only record that they were called (and fail)."""
    folder = tmp_path_factory.mktemp("no-npm")
    calls = folder / "calls.log"
    for tool in ("npm", "npx"):
        (folder / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {calls}\nexit 127\n')
        (folder / tool).chmod(0o755)
    return folder, calls


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory, mlcx_cache, npm_shim, readme_run) -> FreshVenv:
    root = tmp_path_factory.mktemp("wheel")
    # built as a release is built: from this checkout, where npm may vendor web/'s libraries
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root), str(ROOT)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = root.glob("mlcx-*.whl")
    venv = FreshVenv.create(
        root / "v", extra_path=[npm_shim[0]], env={"MLCX_CACHE": str(mlcx_cache)}
    )
    installed = venv.shell(f"python -m pip install -q {wheel}", cwd=root)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, proc, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    pytest.fail("mlcx serve did not become healthy")


def test_the_wheel_carries_the_browser_runtime(wheel_venv):
    where = wheel_venv.shell(
        "python -c 'from mlcx.web.assets import web_runtime; print(web_runtime().page)'",
        cwd=wheel_venv.root,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(wheel_venv.root)


def test_wheel_serve_answers_the_openai_client(wheel_venv):
    port = _free_port()
    proc = wheel_venv.popen(["mlcx", "serve", "smollm2-135m", "--port", str(port)], wheel_venv.root)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(url, proc)
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="none")
        reply = client.chat.completions.create(
            model="smollm2-135m",
            messages=[{"role": "user", "content": QUESTION}],
            temperature=0,
            max_tokens=24,
        )
        assert "Paris" in reply.choices[0].message.content
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_wheel_web_demo_reaches_ready(wheel_venv, tiny_model, browser_ready, tmp_path):
    from mlcx.web.browser import browser_page, wait_ready

    artifact = tmp_path / "tiny-webgpu"
    compiled = wheel_venv.shell(
        f"mlcx compile {tiny_model(TinySpec())} --target webgpu -q q0f32 -o {artifact}",
        cwd=tmp_path,
    )
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    proc = wheel_venv.popen(["mlcx", "web", str(artifact), "--port", "0"], tmp_path)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, f"{line!r} {proc.stderr.read()[-2000:]}"
        with browser_page(url.group(0), timeout_s=300) as page:
            wait_ready(page)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_wheel_package_writes_the_app_shells_without_npm(
    wheel_venv, tiny_model, npm_shim, tmp_path
):
    package = {
        "device": "android",
        "app": {"name": "Tiny Chat", "id": "org.example.tinychat"},
        "models": [{"id": "tiny", "source": str(tiny_model(TinySpec())), "quantization": "q4f32"}],
    }
    (tmp_path / "package.json").write_text(json.dumps(package))
    result = wheel_venv.shell("mlcx package package.json --app both -o dist", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    for folder in ("www", "android", "ios"):
        assert (tmp_path / "dist" / folder).is_dir(), folder
    assert (tmp_path / "dist" / "www" / "vendor" / "@huggingface" / "jinja" / "dist").is_dir()
    assert not npm_shim[1].exists(), npm_shim[1].read_text()
