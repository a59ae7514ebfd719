"""Where this install's browser runtime is (see mlcx.web.bundle for its files).

In order: $MLCX_WEB_ROOT (a web/ folder, for development), the web/ of the checkout this mlcx
runs from (an editable install), the copy inside an installed wheel (mlcx/web/static/).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mlcx.errors import ToolchainError
from mlcx.web.bundle import copy_runtime, missing_libs

WEB_ENV = "MLCX_WEB_ROOT"
CHECKOUT_WEB = Path(__file__).resolve().parents[2] / "web"
WHEEL_ASSETS = Path(__file__).resolve().parent / "static"


@dataclass(frozen=True)
class WebRuntime:
    page: Path  # index.html, style.css, src/
    vendor: Path  # <lib>/<dist or lib>/ (bundle.VENDOR_LIBS)

    @classmethod
    def of_checkout(cls, web: Path) -> WebRuntime:
        return cls(web, web / "node_modules")

    @classmethod
    def of_bundle(cls, assets: Path) -> WebRuntime:
        return cls(assets, assets / "vendor")

    def exists(self) -> bool:
        return (self.page / "index.html").is_file()

    def copy_to(self, out: Path) -> None:
        copy_runtime(self.page, self.vendor, out)


def web_runtime() -> WebRuntime:
    """The browser runtime this mlcx serves and packages, with its libraries present."""
    env = os.environ.get(WEB_ENV)
    if env:
        candidates = [WebRuntime.of_checkout(Path(env))]
    else:
        candidates = [WebRuntime.of_checkout(CHECKOUT_WEB), WebRuntime.of_bundle(WHEEL_ASSETS)]
    found = next((c for c in candidates if c.exists()), None)
    if found is None:
        where = env or f"{CHECKOUT_WEB} or {WHEEL_ASSETS}"
        raise ToolchainError(
            f"the browser runtime is not at {where}: install mlcx from a wheel (it carries the "
            f"runtime), or set {WEB_ENV} to a checkout's web/ folder"
        )
    if missing_libs(found.vendor):
        raise ToolchainError(
            f"{found.vendor} lacks {', '.join(missing_libs(found.vendor))}; install the page's "
            f"libraries with `npm ci --prefix {found.page}` (scripts/setup-web.sh does it)"
        )
    return found
