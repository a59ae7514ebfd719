"""Stop strings over streamed text, with OpenAI semantics.

Text is fed in deltas as the detokenizer produces it. What might be the start of a stop string is
held back until the next delta settles it, so a stop string split across tokens is still caught and
never leaks to the client. When one appears, the output is cut right before it (the stop string
itself is not returned) and generation should end.

If several stop strings are in the text, the one whose last character comes first wins (ties: the
one starting first), i.e. the one that would have been seen first had the text arrived character
by character. So the result does not depend on how the text was split into deltas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StopCheck:
    """What `feed` found: `text` is safe to emit now; `stop` is the stop string hit, if any."""

    text: str
    stop: str | None = None

    @property
    def stopped(self) -> bool:
        return self.stop is not None


class StopStringMatcher:
    def __init__(self, stop: Sequence[str]) -> None:
        if isinstance(stop, str):
            raise ValueError("stop must be a list of strings; wrap a single stop string in a list")
        for index, item in enumerate(stop):
            if not isinstance(item, str) or not item:
                raise ValueError(f"stop[{index}] is {item!r}; stop strings must be non-empty str")
        self.stop = tuple(dict.fromkeys(stop))
        self._held = ""
        self._stopped: str | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped is not None

    def feed(self, delta: str) -> StopCheck:
        """Take the next piece of generated text; return what can be emitted now."""
        if self._stopped is not None:
            raise ValueError(
                f"a stop string ({self._stopped!r}) was already hit; stop generating and "
                "feed no more text"
            )
        text = self._held + delta
        found = _first_stop(text, self.stop)
        if found is not None:
            start, stop = found
            self._held = ""
            self._stopped = stop
            return StopCheck(text[:start], stop)
        keep = longest_partial_suffix(text, self.stop)
        self._held = text[len(text) - keep :] if keep else ""
        return StopCheck(text[: len(text) - keep])

    def flush(self) -> str:
        """The held-back text, once generation has ended without hitting a stop string."""
        held, self._held = self._held, ""
        return held


def _first_stop(text: str, stops: Sequence[str]) -> tuple[int, str] | None:
    """(start, stop) of the stop string that ends first in `text`; ties go to the longer one."""
    best: tuple[int, int, str] | None = None
    for stop in stops:
        start = text.find(stop)
        if start < 0:
            continue
        candidate = (start + len(stop), start, stop)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    return None if best is None else (best[1], best[2])


def longest_partial_suffix(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of some stop string."""
    longest = 0
    for stop in stops:
        for length in range(min(len(stop) - 1, len(text)), longest, -1):
            if text.endswith(stop[:length]):
                longest = length
                break
    return longest
