"""Where the tests keep what they compiled between runs: `~/.cache/mlcx/<name>/` (beside mlcx's
own caches, mlcx.cache.cache_dir), outside the checkout, so that a fresh clone of the same
commit (CI's) finds what a run before it compiled, as a build cache does. Entries are keyed by
what decides their content, the compiling sources' hash included, so an entry of an older
checkout is never hit again; prune() deletes what no run has used for a week."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from mlcx.cache import cache_dir, write_whole

PRUNE_DAYS = 7
# seconds this process spent making what a cache did not hold, by the cache's folder name
# (tests/support/folder_times.py prints them by test folder)
MADE: dict[str, float] = defaultdict(float)


def cache_root(env: str, name: str) -> Path:
    """$`env` if set ("off": the caller keeps nothing), else ~/.cache/mlcx/`name`."""
    return Path(os.environ.get(env) or cache_dir() / name)


def touch(path: Path) -> None:
    """Marks an entry used now: prune() keeps it."""
    os.utime(path)


@contextmanager
def making(root: Path) -> Iterator[None]:
    """Counts the time inside as spent making an entry of the cache at `root` (MADE)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        MADE[root.name] += time.perf_counter() - started


def kept(path: Path, write: Callable[[Path], None]) -> Path:
    """`path`, written by `write(staging)` when missing: whole or not at all (two workers may
    both write it; either copy is whole), and marked used."""
    if not path.exists():
        with making(path.parent):
            write_whole(path, write)  # the staging name keeps the suffix: ".so", ".s" ...
    touch(path)
    return path


def kept_entry(root: Path, key: str, suffix: str, write: Callable[[Path], None]) -> Path:
    """The file `write(path)` makes, kept as `root`/`key``suffix` (kept()); with `root` "off",
    written afresh into a temporary folder each call, so that callers read one path either way."""
    if str(root) == "off":
        path = Path(tempfile.mkdtemp()) / f"entry{suffix}"
        write(path)
        return path
    return kept(root / f"{key}{suffix}", write)


def tree_digest(path: Path) -> str:
    """A file or folder by its name and the bytes of its files (relative names and contents)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256(path.name.encode())
    for file in files:
        digest.update(b"\0" + str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as stream:
            digest.update(hashlib.file_digest(stream, "sha256").digest())
    return digest.hexdigest()


def kept_copy(root: Path, parts: dict, out: Path, write: Callable[[Path], None]) -> Path:
    """`out`: a copy of the entry of `parts` (JSON, with trees keyed by tree_digest) under
    `root`, written by `write(staging)` when missing (kept_entry)."""
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]
    shutil.copyfile(kept_entry(root, key, out.suffix, write), out)
    return out


def prune(root: Path, days: float = PRUNE_DAYS) -> int:
    """Deletes the entries under `root` that no run has used for `days` and returns how many.
    An entry is every file and folder whose name starts with the same key (`KEY`, `KEY.lock`,
    `KEY.log.json`, `KEY.so`, ...), used when the newest of them was touched. One another
    worker is using was just touched, so it is never that old."""
    if str(root) == "off" or not root.is_dir():
        return 0
    entries: dict[str, list[Path]] = defaultdict(list)
    for path in root.iterdir():
        entries[path.name.split(".")[0]].append(path)
    cutoff = time.time() - days * 86400
    old = [paths for paths in entries.values() if max(_mtime(p) for p in paths) < cutoff]
    for paths in old:
        for path in paths:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    return len(old)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
