"""The app page of a `mlcx package --app` dist folder in headless Chromium, as the app shells
show it: an iPhone-sized touch screen, one custom https origin serving the dist folder (the
shells' scheme handler / asset loader), and the Android bridge object catching the page's
events in `window.mlcxEvents`."""

from __future__ import annotations

import mimetypes
from contextlib import contextmanager
from pathlib import Path

ORIGIN = "https://mlcx.app"
IPHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3,
          "is_mobile": True, "has_touch": True}  # fmt: skip
# The Android bridge object as the page sees it (ChatBridge.kt): events arrive as JSON strings.
ANDROID_BRIDGE = """window.mlcxEvents = [];
window.mlcxAndroid = { postMessage: (json) => window.mlcxEvents.push(JSON.parse(json)) };"""


def page_url(model: str) -> str:
    return f"{ORIGIN}/www/index.html?app=mlcx-app.json&model={model}"


def answering(handle):
    """A route handler that answers 500 when it fails, so that the page fails (never waits)."""

    def guarded(route):
        try:
            handle(route)
        except Exception as err:  # noqa: BLE001 (any failure must reach the page)
            route.fulfill(status=500, body=f"test server: {err!r}")

    return guarded


def serve_dist(dist: Path, requested: list[str]):
    """A Playwright route handler: the app shells' scheme handler, files from the dist folder."""

    @answering
    def handle(route):
        path = route.request.url.removeprefix(ORIGIN + "/").split("?")[0]
        requested.append(path)
        file = (dist / path).resolve()
        if not file.is_file() or not file.is_relative_to(dist.resolve()):
            return route.fulfill(status=404, body="not found")
        kind = (
            "text/javascript" if file.suffix in (".js", ".mjs") else mimetypes.guess_type(file)[0]
        )
        route.fulfill(
            status=200, body=file.read_bytes(), content_type=kind or "application/octet-stream"
        )

    return handle


@contextmanager
def phone_page(
    dist: Path, url: str, requested: list[str], flags: tuple[str, ...], script="", routes=None
):
    """The page at `url` on an iPhone-sized touch screen whose origin serves the dist folder."""
    from playwright.sync_api import sync_playwright

    from mlcx.web.browser import chromium_path

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=flags)
        try:
            context = browser.new_context(**IPHONE)
            context.route(f"{ORIGIN}/**", serve_dist(dist, requested))
            for pattern, handler in (routes or {}).items():
                context.route(pattern, handler)
            context.add_init_script(ANDROID_BRIDGE + script)
            page = context.new_page()
            page.set_default_timeout(600_000)
            page.goto(url)
            yield page
        finally:
            browser.close()
