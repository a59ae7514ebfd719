"""Recorded fixtures carry no machine's paths (home, cache or work directories)."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
MACHINE_PATH = re.compile(r"(/root/|/home/|/Users/|/tmp/|/work/|[A-Z]:\\\\Users)")


def test_no_fixture_holds_a_machine_path():
    found = [
        p.name for p in FIXTURES.rglob("*") if p.is_file() and MACHINE_PATH.search(p.read_text())
    ]
    assert found == []
