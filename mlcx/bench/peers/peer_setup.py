"""What a peer engine of `mlcx bench --against` is asked to run (mlcx/bench/peers/peers.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mlcx.bench.workloads.workload import Workload


@dataclass(frozen=True)
class PeerSetup:
    """What a peer is asked to run: the same model, workload and KV dtype as mlcx."""

    gguf: Path
    workload: Workload
    threads: int
    kv_dtype: str
    device: str  # what mlcx runs on, for peers that should run on the same device
    build: bool = False  # build a missing peer that takes long to build (llama.cpp-vulkan)
    say: Callable[[str], None] = print
