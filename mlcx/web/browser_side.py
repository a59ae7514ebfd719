"""The browser side of `mlcx bench web`: the artifact served by `mlcx web`'s server and run
by the demo page in headless Chromium (WebGPU on SwiftShader), one page for the whole bench."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

from mlcx.web.browser import browser_page, send_chat, wait_ready
from mlcx.web.dawn import DawnToggles
from mlcx.web.server import serve_in_background, url_of
from mlcx.web.timing import KV_BLOCKS, Answer, Sample


class BrowserSide:
    where = "browser"

    def __init__(self, artifact: Path, dawn: DawnToggles):
        self._stack = ExitStack()
        started = time.perf_counter()
        try:
            server = serve_in_background(artifact)
            self._stack.callback(server.server_close)
            self._stack.callback(server.shutdown)
            url = url_of(server) + f"?kv_blocks={KV_BLOCKS}"
            self.page = self._stack.enter_context(browser_page(url, dawn=dawn))
            wait_ready(self.page)
        except BaseException:
            self._stack.close()
            raise
        self.ready_s = time.perf_counter() - started  # browser start to the page's "ready"
        self.adapter = self.page.get_attribute("#model", "data-adapter") or "unknown"

    def run(self, prompt: list[int], decode: int) -> Sample:
        out = self.page.evaluate("([ids, n]) => window.mlcx.bench(ids, n)", [prompt, decode])
        return Sample(
            out["prefillTokens"], out["prefillSeconds"], out["decodeTokens"], out["decodeSeconds"]
        )

    def chat(self, text: str, max_tokens: int) -> Answer:
        """Through the demo's UI: seconds from pressing Send to the complete reply."""
        reply, seconds = send_chat(self.page, text, max_tokens)
        return Answer(reply["text"], seconds, len(reply["tokenIds"]))

    def close(self) -> None:
        self._stack.close()
