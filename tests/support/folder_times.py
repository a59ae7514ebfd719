"""Prints, at the end of a run, the seconds the tests of each folder took (setup, call and
teardown, summed over workers), so CI's log shows where the suite's time goes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable


def seconds_by(terminalreporter, key: Callable[[str], str]) -> dict[str, float]:
    """The run's test seconds (setup, call and teardown) summed by `key(nodeid)`."""
    seconds: dict[str, float] = defaultdict(float)
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            if nodeid and hasattr(report, "duration"):
                seconds[key(nodeid)] += report.duration
    return seconds


def pytest_terminal_summary(terminalreporter) -> None:
    seconds = seconds_by(terminalreporter, _folder)
    if not seconds:
        return
    terminalreporter.write_sep("=", "test seconds per folder (summed over workers)")
    for folder, total in sorted(seconds.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{total:8.1f}  {folder}")
    terminalreporter.write_line(f"{sum(seconds.values()):8.1f}  all")


def _folder(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else path
