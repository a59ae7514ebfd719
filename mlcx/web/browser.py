"""Headless Chromium with WebGPU on SwiftShader (its CPU Vulkan), driven by Playwright.

Never downloads a browser: it runs the system Chromium (Debian package `chromium`, see
scripts/setup-system.sh) with a throwaway profile. Running as root needs --no-sandbox.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from mlcx.errors import ToolchainError

CHROMIUM_ENV = "MLCX_CHROMIUM"
FLAGS = (
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium_path() -> str:
    path = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        raise ToolchainError(
            f"no Chromium at {path}; install the Debian package `chromium` "
            f"(scripts/setup-system.sh) or set {CHROMIUM_ENV}"
        )
    return path


@contextmanager
def browser_page(url: str, timeout_s: float = 600) -> Iterator:
    """A Playwright page at `url` in headless Chromium; console errors are kept on
    `page.mlcx_console` for diagnostics."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise ToolchainError("driving Chromium needs Playwright: pip install 'mlcx[web]'") from None
    with tempfile.TemporaryDirectory(prefix="mlcx-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=list(FLAGS)
        )
        try:
            page = context.new_page()
            page.set_default_timeout(timeout_s * 1000)
            page.mlcx_console = []
            page.on("console", lambda m: page.mlcx_console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: page.mlcx_console.append(f"pageerror: {e}"))
            page.goto(url)
            yield page
        finally:
            context.close()


def wait_ready(page) -> None:
    """Wait until the demo has loaded its model (or raise with the page's error)."""
    page.wait_for_function("['ready', 'error'].includes(document.body.dataset.state)")
    if page.evaluate("document.body.dataset.state") == "error":
        raise ToolchainError(f"the page failed: {page.inner_text('#error')}")
