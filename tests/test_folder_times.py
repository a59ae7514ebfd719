"""The end-of-run table (tests/support/folder_times.py): each folder's test seconds, and the
seconds its tests spent making what a disk cache did not hold, reported from xdist's workers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["pytester"]

MAKES = """
import time
from pathlib import Path
from tests.support.disk_cache import kept

def test_makes_then_reads(tmp_path_factory):
    cache = Path(tmp_path_factory.getbasetemp()) / "kernels-cache"
    def write(path):
        time.sleep(0.6)
        path.write_text("entry")
    for _ in range(2):  # made once, then read back
        assert kept(cache / "key.txt", write).read_text() == "entry"
"""


def test_a_worker_s_making_reaches_the_table_under_its_folder(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the child imports tests.support
    pytester.makepyfile(**{"made/test_made": MAKES, "plain/test_plain": "def test_x(): pass\n"})
    result = pytester.runpytest_subprocess("-p", "tests.support.folder_times", "-n", "2")
    result.assert_outcomes(passed=2)
    lines = result.outlines[[i for i, line in enumerate(result.outlines) if "made:" in line][0] :]
    assert "kernels-cache" in lines[0]
    rows = {line.split()[-1]: line.split()[:-1] for line in lines[1:] if re.match(r"\s*\d", line)}
    made = float(rows["made/test_made.py"][1])
    assert 0.6 <= made < 1.2  # one write of 0.6 s: the second call read it back
    assert float(rows["plain/test_plain.py"][1]) == 0.0
    assert float(rows["all"][1]) == made
