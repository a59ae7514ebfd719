"""The CUDA peer: llama.cpp's CUDA backend with CUDA graphs, timed by its own `llama-bench`
(mlcx.bench.peers.llama_bench).

Not the Python binding: its per-token Python cost would flatter mlcx. The binary comes from
scripts/build-llamacpp-cuda.sh (the same llama.cpp source as the other peers, built with nvcc
for one arch, CUDA graphs on; ~35 minutes on 2 cores), cached under `<cache>/peers/`.
"""

from __future__ import annotations

from mlcx.bench.peers.llama_bench import LlamaBenchBackend, LlamaBenchEngine
from mlcx.bench.peers.llamacpp_build import LlamaCppBuild
from mlcx.bench.peers.peer_setup import PeerSetup

BUILD = LlamaCppBuild("cuda", "llama.cpp's CUDA backend for one GPU arch", "~35 minutes on 2 cores")
CUDA = LlamaBenchBackend("llama.cpp-cuda", "CUDA", "CUDA_VISIBLE_DEVICES")


class LlamaCppCudaEngine(LlamaBenchEngine):
    def __init__(self, setup: PeerSetup):
        super().__init__(CUDA, BUILD.ensure("llama-bench", setup.build, setup.say), setup)
