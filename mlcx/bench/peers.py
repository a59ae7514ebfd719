"""The engines `mlcx bench --against` runs beside mlcx: name -> factory of a ready engine.

Every engine has a `name`, the `device` it ran on (in words), the `command` that ran it (None
for an in-process library), `notes` for the report, `warm_up(ids, workload)` and
`run(ids, workload) -> RunTiming`. Factories build or install what a peer needs; none runs at
import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mlcx.bench.workload import Workload


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


def _llama_cpp(setup: PeerSetup):
    from mlcx.bench.llamacpp import LlamaCppEngine

    return LlamaCppEngine(setup)


def _llama_cpp_cuda(setup: PeerSetup):
    from mlcx.bench.llamacpp_cuda import LlamaCppCudaEngine

    return LlamaCppCudaEngine(setup)


def _llama_cpp_vulkan(setup: PeerSetup):
    from mlcx.bench.llamacpp_vulkan import LlamaCppVulkanEngine

    return LlamaCppVulkanEngine(setup)


PEERS: dict[str, Callable[[PeerSetup], object]] = {
    "llama.cpp": _llama_cpp,  # llama-cpp-python on the CPU, in process
    "llama.cpp-vulkan": _llama_cpp_vulkan,  # llama.cpp's Vulkan backend: llama-bench
    "llama.cpp-cuda": _llama_cpp_cuda,  # llama.cpp's CUDA backend (CUDA graphs): llama-bench
}
