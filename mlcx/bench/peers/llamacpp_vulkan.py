"""The GPU peer on Vulkan: llama.cpp's Vulkan backend, timed by its own `llama-bench`
(mlcx.bench.peers.llama_bench).

The binaries come from scripts/build-llamacpp-vulkan.sh (the llama.cpp that llama-cpp-python's
sdist vendors; Debian packages through apt; 20-40 min on 2 cores), cached under
`<cache>/peers/`; mlcx runs the script only when asked to (`--build-peer`).
"""

from __future__ import annotations

from pathlib import Path

from mlcx.bench.peers.llama_bench import LlamaBenchBackend, LlamaBenchEngine
from mlcx.bench.peers.llamacpp_build import LlamaCppBuild
from mlcx.bench.peers.peer_setup import PeerSetup

BUILD = LlamaCppBuild("vulkan", "llama.cpp's Vulkan backend", "20-40 min on 2 cores")
# ggml-vulkan skips CPU-type devices (lavapipe) unless devices are listed
VULKAN = LlamaBenchBackend("llama.cpp-vulkan", "Vulkan", "GGML_VK_VISIBLE_DEVICES")


def ensure_llama_bench(build: bool, say) -> Path:
    return BUILD.ensure("llama-bench", build, say)


class LlamaCppVulkanEngine(LlamaBenchEngine):
    def __init__(self, setup: PeerSetup):
        super().__init__(VULKAN, ensure_llama_bench(setup.build, setup.say), setup)
