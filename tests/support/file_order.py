"""Runs the slowest test files first, so that with `--dist loadfile` no worker is left alone with
a long file at the end (the longest-first rule of scheduling jobs on parallel machines).

Each run records the seconds each file took (setup, call and teardown) in
`~/.cache/mlcx/test-durations/files.json` (MLCX_TEST_DURATIONS=off keeps none, =DIR elsewhere);
the next run's collection puts files in order of those seconds, longest first, files never
timed after them by their number of tests (pytest-xdist's own order). Within a file the order
is untouched. Every worker reads the same record while collecting, so all collect the same
order, as xdist requires; only the controller writes it, after the workers are done.
"""

from __future__ import annotations

import json
from collections import defaultdict

from mlcx.cache import write_whole
from tests.support.disk_cache import cache_root
from tests.support.folder_times import seconds_by

ROOT = cache_root("MLCX_TEST_DURATIONS", "test-durations")
RECORD = ROOT / "files.json"


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def recorded() -> dict[str, float]:
    """File -> seconds of its last timed run; empty when nothing (readable) is recorded."""
    if str(ROOT) == "off":
        return {}
    try:
        return {str(k): float(v) for k, v in json.loads(RECORD.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def longest_first(items: list, seconds: dict[str, float]) -> list:
    """`items` grouped by file, files by recorded seconds (then by test count), descending."""
    files: dict[str, list] = defaultdict(list)
    for item in items:
        files[_file(item.nodeid)].append(item)
    order = sorted(files, key=lambda f: (-seconds.get(f, -1.0), -len(files[f])))
    return [item for f in order for item in files[f]]


def pytest_configure(config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # xdist's own order (by test count) off
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items) -> None:
    items[:] = longest_first(items, recorded())


def pytest_terminal_summary(terminalreporter) -> None:
    if str(ROOT) == "off" or hasattr(terminalreporter.config, "workerinput"):
        return
    seconds = seconds_by(terminalreporter, _file)
    if seconds:
        text = json.dumps({**recorded(), **seconds}, indent=0, sort_keys=True)
        write_whole(RECORD, lambda staging: staging.write_text(text))
