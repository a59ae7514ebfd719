"""A model runner that sleeps before each forward step.

The tiny test models step in ~2 ms; tests about timing (a request joining a running batch, a
client disconnecting mid-request) need steps slow enough to act between them.
"""

from __future__ import annotations

import time


class SlowRunner:
    def __init__(self, runner, delay_s: float):
        self._runner = runner
        self._delay_s = delay_s

    def forward(self, batch):
        time.sleep(self._delay_s)
        return self._runner.forward(batch)

    def __getattr__(self, name: str):
        return getattr(self._runner, name)
