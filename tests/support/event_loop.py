"""Whether code runs on an asyncio event loop: the server must keep tokenizing off it."""

from __future__ import annotations

import asyncio


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
