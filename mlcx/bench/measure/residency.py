"""Whether mlcx's weights and a CPU peer's model file fit in this host's memory at once.

Interleaved rep by rep, two engines whose weights do not fit together evict each other's pages
between reps: the peer's mmap'd GGUF is then read anew from disk for every prefill, which
measures the disk, not the peer. Such engines run one after the other instead, each freed
before the next loads (a gpt-oss-20b-shaped pair is 2 x 12 GB on a 24 GB machine).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# what a run needs beside the weights (KV cache, activations, the interpreter), as a share
# of the memory available: the weights must fit in the rest
HEADROOM = 0.15
GB = 1e9


def available_bytes() -> int:
    """Memory the kernel could hand out now, reclaimable page cache included."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def tree_bytes(path: Path) -> int:
    """Bytes of a file, or of every file under a directory."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@dataclass(frozen=True)
class Residency:
    ours: int  # bytes of mlcx's parameters
    peer: int  # bytes of the peer's model file
    available: int  # bytes available before either loaded

    @property
    def together(self) -> bool:
        return self.ours + self.peer <= (1 - HEADROOM) * self.available

    def note(self, peers: tuple[str, ...]) -> str:
        return (
            f"engines one after the other (mlcx, then {', '.join(peers)}), not interleaved: "
            f"their weights ({self.ours / GB:.1f} GB and {self.peer / GB:.1f} GB) do not fit "
            f"together in the {self.available / GB:.1f} GB this host had available"
        )


def residency(params_dir: Path, gguf: Path) -> Residency:
    return Residency(tree_bytes(params_dir), tree_bytes(gguf), available_bytes())
