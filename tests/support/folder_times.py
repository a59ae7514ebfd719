"""Prints, at the end of a run, the seconds the tests of each folder took (setup, call and
teardown, summed over workers), so CI's log shows where the suite's time goes; and beside them
the seconds spent making what the tests' disk caches did not hold (compiled artifacts, kernels,
references, converted GGUFs: tests/support/disk_cache.py), the part a warm cache saves."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import pytest

from tests.support.disk_cache import MADE

PROPERTY = "made_seconds"  # a report's user property: {cache folder name: seconds}
_reported: dict[str, float] = defaultdict(float)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each report carries what was made since the last one (user properties reach the
    controller from xdist's workers)."""
    outcome = yield
    made = {name: total - _reported[name] for name, total in MADE.items()}
    made = {name: seconds for name, seconds in made.items() if seconds > 0}
    if made:
        _reported.update(MADE)
        outcome.get_result().user_properties.append((PROPERTY, made))


def seconds_by(terminalreporter, key: Callable[[str], str]) -> dict[str, float]:
    """The run's test seconds (setup, call and teardown) summed by `key(nodeid)`."""
    seconds: dict[str, float] = defaultdict(float)
    for report in _reports(terminalreporter):
        seconds[key(report.nodeid)] += report.duration
    return seconds


def made_by(terminalreporter, key: Callable[[str], str]) -> dict[str, dict[str, float]]:
    """Seconds spent making cache entries, by `key(nodeid)` and cache folder name."""
    made: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for report in _reports(terminalreporter):
        for name, value in getattr(report, "user_properties", ()):
            for cache, seconds in value.items() if name == PROPERTY else ():
                made[key(report.nodeid)][cache] += seconds
    return made


def _reports(terminalreporter):
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "nodeid", "") and hasattr(report, "duration"):
                yield report


def pytest_terminal_summary(terminalreporter) -> None:
    seconds = seconds_by(terminalreporter, _folder)
    if not seconds:
        return
    made = made_by(terminalreporter, _folder)
    totals: dict[str, float] = defaultdict(float)
    for by_cache in made.values():
        for cache, spent in by_cache.items():
            totals[cache] += spent
    caches = sorted(cache for cache, spent in totals.items() if spent >= 0.1)
    terminalreporter.write_sep("=", "test seconds per folder (summed over workers)")
    terminalreporter.write_line(f"{'all':>8}  {'made: ' + ', '.join(caches):<40}  folder")
    for folder, total in sorted(seconds.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{total:8.1f}  {_made(made[folder], caches):<40}  {folder}")
    terminalreporter.write_line(f"{sum(seconds.values()):8.1f}  {_made(totals, caches):<40}  all")


def _made(by_cache: dict[str, float], caches: list[str]) -> str:
    return "  ".join(f"{by_cache.get(cache, 0.0):7.1f}" for cache in caches)


def _folder(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else path
