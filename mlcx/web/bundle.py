"""The browser runtime's files, and the copy of them a built wheel carries.

Layout of the runtime wherever it is copied (a wheel's mlcx/web/static/, `mlcx package`'s
dist/www/):

    index.html, style.css, src/*.js     the page and the JS runtime, from web/
    vendor/<lib>/<dist or lib>/         the tokenizer, Jinja and XGrammar libraries, from
                                        web/node_modules as `npm ci` installs them from
                                        web/package-lock.json

Standard library only: setup.py loads this file by path to bundle the runtime into a wheel,
where neither mlcx's dependencies nor mlcx itself can be imported.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PAGE_FILES = ("index.html", "style.css")
PAGE_DIRS = ("src",)
# npm library -> the folder of it the browser loads
VENDOR_LIBS = {
    "@huggingface/tokenizers": "dist",
    "@huggingface/jinja": "dist",
    "@mlc-ai/web-xgrammar": "lib",
}
LIB_NOTICES = ("package.json", "LICENSE")  # kept beside each vendored dist/


def missing_libs(vendor: Path) -> list[str]:
    return [lib for lib, built in VENDOR_LIBS.items() if not (vendor / lib / built).is_dir()]


def copy_runtime(page: Path, vendor: Path, out: Path) -> None:
    """Copies the page from `page` (a web/ folder) and the libraries from `vendor` (its
    node_modules, or a bundle's vendor/) into `out`, which must not exist yet."""
    out.mkdir(parents=True)
    for name in PAGE_FILES:
        shutil.copyfile(page / name, out / name)
    for name in PAGE_DIRS:
        shutil.copytree(page / name, out / name)
    for lib, built in VENDOR_LIBS.items():
        shutil.copytree(vendor / lib / built, out / "vendor" / lib / built, ignore=_not_served)
        for notice in LIB_NOTICES:
            if (vendor / lib / notice).is_file():
                shutil.copyfile(vendor / lib / notice, out / "vendor" / lib / notice)


def bundle(web: Path, out: Path) -> None:
    """The wheel's copy of the runtime: web/ plus its npm libraries, installed first with
    `npm ci` from web/package-lock.json when web/node_modules lacks them."""
    vendor = web / "node_modules"
    if missing_libs(vendor):
        _npm_ci(web)
    shutil.rmtree(out, ignore_errors=True)
    copy_runtime(web, vendor, out)


def _npm_ci(web: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            f"building mlcx's wheel vendors the browser runtime's libraries from "
            f"{web / 'package-lock.json'} with npm, which is not on PATH: install Node.js and "
            f"npm (scripts/setup-web.sh does it), or build from a checkout where `npm ci` ran"
        )
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(web)], check=True)


def _not_served(_folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n.endswith((".d.ts", ".map", ".cjs"))]
