"""Noticing that the client went away, so its request is aborted instead of run for nobody.

uvicorn does not fail a `send` to a closed connection; the only reliable signal is the
`http.disconnect` message from `receive`, which arrives once the request body has been read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
Receive = Callable[[], Awaitable[dict[str, Any]]]


async def wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def run_until_disconnect(work: Awaitable[T], receive: Receive) -> T | None:
    """The result of `work`, or None if the client disconnected first (`work` is cancelled,
    so its cleanup runs before this returns)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, watcher):
            pending.cancel()
        await asyncio.gather(task, watcher, return_exceptions=True)
    if task.cancelled():
        return None
    return task.result()
