"""Server-Sent Events: `data: {json}` events, ending with `data: [DONE]`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from mlcx.server.disconnect import run_until_disconnect

DONE = "data: [DONE]\n\n"


# Characters JSON leaves raw but line readers split on (Python's str.splitlines, which httpx's
# iter_lines follows): escaped, so one event stays one line for every client.
_LINE_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})


def sse(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text.translate(_LINE_BREAKS)}\n\n"


class EventStream(StreamingResponse):
    """A stream that stops (and calls `on_close`) as soon as the client disconnects."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[str], on_close: Callable[[], None]):
        super().__init__(events, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self._events = events
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await run_until_disconnect(self.stream_response(send), receive)
        finally:
            self._on_close()
            aclose = getattr(self._events, "aclose", None)
            if aclose is not None:
                await aclose()
