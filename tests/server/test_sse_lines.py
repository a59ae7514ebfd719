"""One event is one line for line readers that split where str.splitlines does (httpx's
iter_lines): the characters JSON leaves raw but those readers break on are escaped."""

import json

from mlcx.server.streaming import sse


def test_an_event_with_unicode_line_breaks_stays_one_line_and_round_trips():
    payload = {"text": "a\x85b\u2028c\u2029d\x0be\né"}
    event = sse(payload)
    assert event.endswith("\n\n")
    (line,) = event.splitlines()[:-1] or event.splitlines()
    assert len(event.rstrip("\n").splitlines()) == 1
    assert json.loads(line.removeprefix("data: ")) == payload
    assert "é" in line  # other characters stay as they are (not ASCII-escaped)
