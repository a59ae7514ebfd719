"""web/ as the npm package `mlcx-web`: `npm pack` makes a tarball, `npm install --offline` puts
it into a scratch project; node imports the engine from it by the package's name, through the
`exports` map, with its types where `types` says; and a page served from that project (with a
compiled tiny artifact on the same origin) imports the installed copy by name and answers the
Python backend's greedy tokens in headless Chromium.

Offline, npm cannot look up the dependencies' versions (npm ci, which filled web/node_modules,
caches the tarballs but not the registry's metadata), so their installed copies in
web/node_modules are packed and installed beside it: what a user's `npm install mlcx-web`
fetches from the registry."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from mlcx.web.package_entry import BARE_IMPORTS as BARE

WEB = Path(__file__).resolve().parents[2] / "web"
JS = Path(__file__).parent / "js"
PROMPT = "The capital of France is"
MAX_TOKENS = 6


def _npm(*args: str, cwd: Path) -> str:
    out = subprocess.run(["npm", *args], cwd=cwd, capture_output=True, text=True)
    assert out.returncode == 0, f"npm {' '.join(args)}: {out.stderr[-2000:]}"
    return out.stdout


@pytest.fixture(scope="module")
def packed(browser_ready, tmp_path_factory):
    """(npm pack's report on web/, a scratch project with the tarball installed)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is missing: run scripts/setup-web.sh")
    tmp = tmp_path_factory.mktemp("package")
    [report] = json.loads(_npm("pack", "--json", "--pack-destination", str(tmp), cwd=WEB))
    tarballs = [str(tmp / report["filename"])]
    deps = [
        str(WEB / "node_modules" / name)
        for name in json.loads((WEB / "package.json").read_text())["dependencies"]
    ]
    for dep in _npm("pack", "--pack-destination", str(tmp), *deps, cwd=WEB).split():
        tarballs.append(str(tmp / dep))
    project = tmp / "scratch"
    project.mkdir()
    (project / "package.json").write_text('{"name": "scratch", "private": true, "type": "module"}')
    _npm("install", "--offline", "--no-audit", "--no-fund", *tarballs, cwd=project)
    return report, project


def test_the_packed_tarball_installs_and_imports(packed):
    report, project = packed
    files = {f["path"] for f in report["files"]}
    assert {"package.json", "src/index.js", "src/index.d.ts"} <= files
    assert not any(f.startswith(("test/", "node_modules/")) for f in files)
    shutil.copyfile(JS / "package_check.mjs", project / "check.mjs")
    out = subprocess.run(["node", "check.mjs"], cwd=project, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "imported mlcx-web 0.1.0"


def _import_map(project: Path) -> dict:
    """The installed package's entry (from its `exports`) and its dependencies under
    /node_modules/, the same files `mlcx web` serves from /vendor/."""
    meta = json.loads((project / "node_modules" / "mlcx-web" / "package.json").read_text())
    entry = "/node_modules/mlcx-web/" + meta["exports"]["."]["default"].removeprefix("./")
    deps = {name: path.replace("/vendor/", "/node_modules/", 1) for name, path in BARE.items()}
    assert set(deps) == set(meta["dependencies"]), "mlcx.web.package_entry.BARE_IMPORTS is stale"
    return {"imports": {"mlcx-web": entry, **deps}}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def _serve(root: Path) -> ThreadingHTTPServer:
    """The scratch project's folder (its page, node_modules and artifact) on one local origin."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.browser
def test_a_page_importing_the_installed_package_answers_the_python_backend_s_tokens(
    packed, webgpu_artifact
):
    from mlcx.web.browser import browser_page

    _, project = packed
    artifact = webgpu_artifact("q0f32")
    (project / "artifact").symlink_to(artifact.resolve(), target_is_directory=True)
    page_html = (JS / "package_page.html").read_text()
    (project / "index.html").write_text(
        page_html.replace("IMPORT_MAP", json.dumps(_import_map(project)))
    )
    server = _serve(project)
    query = urlencode({"prompt": PROMPT, "max_tokens": MAX_TOKENS})
    try:
        with browser_page(f"http://127.0.0.1:{server.server_address[1]}/?{query}") as page:
            page.wait_for_function("window.reply || window.failure")
            failure, reply = page.evaluate("[window.failure, window.reply]")
            console = page.mlcx_console
    finally:
        server.shutdown()
        server.server_close()
    assert failure is None, f"{failure}; console: {console}"
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    [want] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))[0].outputs
    [choice] = reply["choices"]
    assert reply["prompt_token_ids"] == prompt_ids
    assert choice["token_ids"] == want.token_ids and choice["message"]["content"] == want.text
    assert reply["usage"]["completion_tokens"] == MAX_TOKENS
