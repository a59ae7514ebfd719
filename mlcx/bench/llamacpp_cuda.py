"""The CUDA peer: llama.cpp's CUDA backend with CUDA graphs, timed by its own `llama-bench`.

Not the Python binding: its per-token Python cost would flatter mlcx. The binary comes from
scripts/build-llamacpp-cuda.sh (the same llama.cpp source as the other peers, built with nvcc
for one arch, CUDA graphs on; hours on 2 cores), cached under `<cache>/peers/`. Each rep is one
`llama-bench -r 1 -o json` process, as for the Vulkan peer (llamacpp_vulkan), with the same
differences from mlcx's work (said in the report).
"""

from __future__ import annotations

import os
import re
import shlex

from mlcx.bench.llamacpp_build import LlamaCppBuild
from mlcx.bench.llamacpp_vulkan import CACHE_TYPES, _run, parse_llama_bench
from mlcx.bench.peer_setup import PeerSetup
from mlcx.bench.workload import RunTiming, Workload
from mlcx.errors import ToolchainError

BUILD = LlamaCppBuild("cuda", "llama.cpp's CUDA backend for one GPU arch", "hours on 2 cores")
DEVICES_VAR = "CUDA_VISIBLE_DEVICES"
_LISTED = re.compile(r"^\s*CUDA\d+: (.+?) \(\d+ MiB, \d+ MiB free\)\s*$", re.M)


class LlamaCppCudaEngine:
    name = "llama.cpp-cuda"

    def __init__(self, setup: PeerSetup):
        binary = str(BUILD.ensure("llama-bench", setup.build, setup.say))
        w = setup.workload
        cache = CACHE_TYPES.get(setup.kv_dtype, "f16")
        self.env = {DEVICES_VAR: os.environ.get(DEVICES_VAR, "0")}
        self.argv = [binary, "-m", str(setup.gguf), "-ngl", "99", "-t", str(setup.threads)]
        self.argv += ["-p", str(w.prompt_tokens), "-n", str(w.decode_tokens), "-r", "1"]
        self.argv += ["-ctk", cache, "-ctv", cache, "-o", "json"]
        self.command = f"{DEVICES_VAR}={self.env[DEVICES_VAR]} {shlex.join(self.argv)}"
        listed = _LISTED.findall(_run([binary, "--list-devices"], self.env))
        if not listed:
            raise ToolchainError(f"llama-bench sees no CUDA device ({DEVICES_VAR}={self.env})")
        self.device = listed[0]
        self.notes = (
            f"{self.name}: llama-bench decodes {w.decode_tokens} tokens from an empty context, "
            f"mlcx after its {w.prompt_tokens}-token prompt; llama-bench's tokens are random",
        ) + (
            (f"{self.name} keeps an f16 KV cache (llama-bench has no {setup.kv_dtype})",)
            if CACHE_TYPES.get(setup.kv_dtype) != cache
            else ()
        )

    def warm_up(self, ids: list[int], workload: Workload) -> None:
        """Nothing to do: llama-bench warms up inside every run."""

    def run(self, ids: list[int], workload: Workload) -> RunTiming:
        timing, _device = parse_llama_bench(_run(self.argv, self.env), workload)
        return timing
