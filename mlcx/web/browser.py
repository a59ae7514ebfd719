"""Headless Chromium with WebGPU on SwiftShader (its CPU Vulkan), driven by Playwright.

Never downloads a browser: it runs the system Chromium (Debian package `chromium`, see
scripts/setup-system.sh) with a throwaway profile. Running as root needs --no-sandbox.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mlcx.errors import ToolchainError
from mlcx.extras import require
from mlcx.web.dawn import DEFAULT, DawnToggles

CHROMIUM_ENV = "MLCX_CHROMIUM"
ICD_ENV = "MLCX_SWIFTSHADER_ICD"
# Chromium ships its SwiftShader as a Vulkan ICD next to the browser binary (Debian: here).
ICD_NAME = "vk_swiftshader_icd.json"
ICD_DIRS = (Path("/usr/lib/chromium"),)
FLAGS = (
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # A SwiftShader dispatch is CPU work: on a busy machine one can outlast the GPU watchdog,
    # which then kills Chromium's GPU process and with it the page's WebGPU device.
    "--disable-gpu-watchdog",
)


def chromium_path() -> str:
    path = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        raise ToolchainError(
            f"no Chromium at {path}; install the Debian package `chromium` "
            f"(scripts/setup-system.sh) or set {CHROMIUM_ENV}"
        )
    return path


def swiftshader_icd() -> Path:
    """Chromium's own SwiftShader as a Vulkan ICD file, for running natively on the very
    adapter the browser's WebGPU uses."""
    given = os.environ.get(ICD_ENV)
    dirs = (Path(chromium_path()).resolve().parent, *ICD_DIRS)
    candidates = [Path(given)] if given else [d / ICD_NAME for d in dirs]
    for path in candidates:
        if path.is_file():
            return path
    raise ToolchainError(
        f"no Chromium SwiftShader Vulkan ICD at {', '.join(map(str, candidates))}; "
        f"set {ICD_ENV} to Chromium's {ICD_NAME}"
    )


def require_playwright():
    """Playwright's sync API, or one line naming the extra that installs it."""
    return require("playwright.sync_api", "bench", "driving Chromium (mlcx bench web)")


@contextmanager
def browser_page(
    url: str, timeout_s: float = 600, dawn: DawnToggles = DEFAULT, flags: tuple[str, ...] = ()
) -> Iterator:
    """A Playwright page at `url` in headless Chromium started with FLAGS and `flags`; console
    errors are kept on `page.mlcx_console` for diagnostics."""
    sync_playwright = require_playwright().sync_playwright
    with tempfile.TemporaryDirectory(prefix="mlcx-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=chromium_path(),
            headless=True,
            args=[*FLAGS, *dawn.flags, *flags],
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


# the reply sent last is complete (a new lastReply and the page ready again), or the page failed
_REPLIED = """document.body.dataset.state === 'error' ||
  (document.body.dataset.state === 'ready' && window.mlcx.lastReply !== window.mlcxPrevious)"""


def send_chat(page, text: str, max_tokens: int, temperature: float = 0) -> tuple[dict, float]:
    """Types `text` into the demo, presses Send and waits for the whole reply: returns
    window.mlcx.lastReply ({promptIds, tokenIds, text, stats}) and the seconds from the press."""
    page.fill("#max-tokens", str(max_tokens))
    page.fill("#temperature", str(temperature))
    page.fill("#prompt", text)
    page.evaluate("window.mlcxPrevious = window.mlcx.lastReply")
    started = time.perf_counter()
    page.click("#send")
    page.wait_for_function(_REPLIED, polling=50)
    seconds = time.perf_counter() - started
    if page.evaluate("document.body.dataset.state") == "error":
        raise ToolchainError(f"the page failed: {page.inner_text('#error')}")
    return page.evaluate("window.mlcx.lastReply"), seconds
