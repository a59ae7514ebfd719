"""The engines `mlcx bench --against` runs beside mlcx: name -> factory of a ready engine.

Every engine has a `name`, the `device` it ran on (in words), the `command` that ran it (None
for an in-process library), `notes` for the report, `warm_up(ids, workload)` and
`run(ids, workload) -> RunTiming`. Factories build or install what a peer needs; none runs at
import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mlcx.bench.peers.peer_setup import PeerSetup
from mlcx.bench.workloads.workload import RunTiming, Workload


class PeerEngine(Protocol):
    name: str
    device: str
    command: str | None
    notes: tuple[str, ...]

    def warm_up(self, ids: list[int], workload: Workload) -> None: ...

    def run(self, ids: list[int], workload: Workload) -> RunTiming: ...


def _llama_cpp(setup: PeerSetup) -> PeerEngine:
    from mlcx.bench.peers.llamacpp import LlamaCppEngine

    return LlamaCppEngine(setup)


def _llama_cpp_cuda(setup: PeerSetup) -> PeerEngine:
    from mlcx.bench.peers.llamacpp_cuda import LlamaCppCudaEngine

    return LlamaCppCudaEngine(setup)


def _llama_cpp_vulkan(setup: PeerSetup) -> PeerEngine:
    from mlcx.bench.peers.llamacpp_vulkan import LlamaCppVulkanEngine

    return LlamaCppVulkanEngine(setup)


PEERS: dict[str, Callable[[PeerSetup], PeerEngine]] = {
    "llama.cpp": _llama_cpp,  # llama-cpp-python on the CPU, in process
    "llama.cpp-vulkan": _llama_cpp_vulkan,  # llama.cpp's Vulkan backend: llama-bench
    "llama.cpp-cuda": _llama_cpp_cuda,  # llama.cpp's CUDA backend (CUDA graphs): llama-bench
}
