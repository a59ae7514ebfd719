"""web/ as the npm package `mlcx-web`: `npm pack` makes a tarball, `npm install --offline` puts
it into a scratch project, and node imports the engine from it by the package's name, through
the `exports` map, with its types where `types` says.

Offline, npm cannot look up the dependencies' versions (npm ci, which filled web/node_modules,
caches the tarballs but not the registry's metadata), so their installed copies in
web/node_modules are packed and installed beside it: what a user's `npm install mlcx-web`
fetches from the registry."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

WEB = Path(__file__).resolve().parents[2] / "web"

CHECK = Path(__file__).parent / "js" / "package_check.mjs"


def _npm(*args: str, cwd: Path) -> str:
    out = subprocess.run(["npm", *args], cwd=cwd, capture_output=True, text=True)
    assert out.returncode == 0, f"npm {' '.join(args)}: {out.stderr[-2000:]}"
    return out.stdout


def test_the_packed_tarball_installs_and_imports(browser_ready, tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is missing: run scripts/setup-web.sh")
    [packed] = json.loads(_npm("pack", "--json", "--pack-destination", str(tmp_path), cwd=WEB))
    files = {f["path"] for f in packed["files"]}
    assert {"package.json", "src/index.js", "src/index.d.ts"} <= files
    assert not any(f.startswith(("test/", "node_modules/")) for f in files)
    tarballs = [str(tmp_path / packed["filename"])]
    project = tmp_path / "scratch"
    project.mkdir()
    (project / "package.json").write_text('{"name": "scratch", "private": true, "type": "module"}')
    deps = [
        str(WEB / "node_modules" / name)
        for name in json.loads((WEB / "package.json").read_text())["dependencies"]
    ]
    for dep in _npm("pack", "--pack-destination", str(tmp_path), *deps, cwd=WEB).split():
        tarballs.append(str(tmp_path / dep))
    _npm("install", "--offline", "--no-audit", "--no-fund", *tarballs, cwd=project)
    shutil.copyfile(CHECK, project / "check.mjs")
    out = subprocess.run(["node", "check.mjs"], cwd=project, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "imported mlcx-web 0.1.0"
