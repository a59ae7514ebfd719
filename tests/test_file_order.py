"""The suite's file order (tests/support/file_order.py): a run records each file's seconds, and the
next run collects the files longest first, each file's tests in their own order."""

from __future__ import annotations

import json

import pytest

from tests.support import file_order

pytest_plugins = ["pytester"]
FILES = {
    "test_many": "def test_1(): pass\ndef test_2(): pass\ndef test_3(): pass\n",
    "test_slow": "def test_b(): pass\ndef test_a(): pass\n",
    "test_new": "def test_x(): pass\n",
}


@pytest.fixture
def record(pytester, monkeypatch):
    pytester.makepyfile(**FILES)
    monkeypatch.setattr(file_order, "ROOT", pytester.path / "durations")
    monkeypatch.setattr(file_order, "RECORD", pytester.path / "durations" / "files.json")
    return file_order.RECORD


def _collected(pytester) -> list[str]:
    result = pytester.runpytest_inprocess("-p", "tests.support.file_order", "--collect-only", "-q")
    return [line for line in result.outlines if "::" in line]


def test_a_run_records_each_file_s_seconds(pytester, record):
    result = pytester.runpytest_inprocess("-p", "tests.support.file_order")
    result.assert_outcomes(passed=6)
    seconds = json.loads(record.read_text())
    assert set(seconds) == {f"{name}.py" for name in FILES}
    assert all(s >= 0 for s in seconds.values())


def test_files_run_longest_first_then_untimed_by_test_count(pytester, record):
    record.parent.mkdir()
    record.write_text(json.dumps({"test_many.py": 0.5, "test_slow.py": 30.0, "gone.py": 99}))
    assert _collected(pytester) == [
        "test_slow.py::test_b",
        "test_slow.py::test_a",
        "test_many.py::test_1",
        "test_many.py::test_2",
        "test_many.py::test_3",
        "test_new.py::test_x",
    ]


def test_an_unreadable_record_leaves_xdist_s_order(pytester, record):
    record.parent.mkdir()
    record.write_text("{not json")
    order = [nodeid.split("::")[0] for nodeid in _collected(pytester)]
    assert order == ["test_many.py"] * 3 + ["test_slow.py"] * 2 + ["test_new.py"]
