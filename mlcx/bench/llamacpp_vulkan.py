"""The GPU peer: llama.cpp's Vulkan backend, timed by its own `llama-bench`.

The binaries come from scripts/build-llamacpp-vulkan.sh (the llama.cpp that llama-cpp-python's
sdist vendors; Debian packages through apt; 20-40 min on 2 cores), cached under
`<cache>/peers/`; mlcx runs the script only when asked to (`--build-peer`). Each rep is one
`llama-bench -r 1 -o json` process: a prompt test and a decode test, each after llama-bench's
own warm-up run; loading the model is outside its timings.

Not quite the same work as mlcx's (said in the report): llama-bench's decode test starts from
an empty context where mlcx decodes after its prompt (a little more attention work), its tokens
are random, and it has no f32 KV cache, so it keeps f16 when mlcx's cache is f32.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

from mlcx.bench.llamacpp_build import LlamaCppBuild
from mlcx.bench.peer_setup import PeerSetup
from mlcx.bench.workload import RunTiming, Workload
from mlcx.errors import MlcxError, ToolchainError

BUILD = LlamaCppBuild("vulkan", "llama.cpp's Vulkan backend", "20-40 min on 2 cores")
# ggml-vulkan skips CPU-type devices (lavapipe) unless devices are listed; the user's value wins.
DEVICES_VAR = "GGML_VK_VISIBLE_DEVICES"
CACHE_TYPES = {"float16": "f16", "bfloat16": "bf16"}  # llama-bench's -ctk/-ctv names
_LISTED = re.compile(r"^\s*Vulkan\d+: (.+?) \(\d+ MiB, \d+ MiB free\)\s*$", re.M)


def ensure_llama_bench(build: bool, say) -> Path:
    return BUILD.ensure("llama-bench", build, say)


def parse_llama_bench(text: str, workload: Workload) -> tuple[RunTiming, str]:
    """(timing, device) of one `llama-bench -p P -n D -r 1 -o json` run."""
    try:
        tests = json.loads(text)
    except json.JSONDecodeError as err:
        raise MlcxError(f"llama-bench printed no JSON ({err})") from None
    wanted = {"prefill": (workload.prompt_tokens, 0), "decode": (0, workload.decode_tokens)}
    found = {}
    for test in tests:
        for kind, shape in wanted.items():
            if (test.get("n_prompt"), test.get("n_gen")) == shape and not test.get("n_depth"):
                found[kind] = test
    missing = [kind for kind in wanted if kind not in found]
    if missing:
        raise MlcxError(f"llama-bench's JSON has no {' or '.join(missing)} test for {wanted}")
    timing = RunTiming(found["prefill"]["avg_ns"] / 1e9, found["decode"]["avg_ns"] / 1e9)
    return timing, found["prefill"].get("gpu_info") or found["prefill"].get("backends", "?")


def _run(argv: list[str], env: dict[str, str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
    if result.returncode:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise MlcxError(f"{Path(argv[0]).name} failed (exit {result.returncode}): {tail}")
    return result.stdout


class LlamaCppVulkanEngine:
    name = "llama.cpp-vulkan"

    def __init__(self, setup: PeerSetup):
        binary = str(ensure_llama_bench(setup.build, setup.say))
        w = setup.workload
        cache = CACHE_TYPES.get(setup.kv_dtype, "f16")
        self.env = {DEVICES_VAR: os.environ.get(DEVICES_VAR, "0")}
        self.argv = [binary, "-m", str(setup.gguf), "-ngl", "99", "-t", str(setup.threads)]
        self.argv += ["-p", str(w.prompt_tokens), "-n", str(w.decode_tokens), "-r", "1"]
        self.argv += ["-ctk", cache, "-ctv", cache, "-o", "json"]
        self.command = f"{DEVICES_VAR}={self.env[DEVICES_VAR]} {shlex.join(self.argv)}"
        self.device = self._listed_device(binary)
        self.notes = self._notes(setup, cache)

    def _listed_device(self, binary: str) -> str:
        listed = _LISTED.findall(_run([binary, "--list-devices"], self.env))
        if not listed:
            raise ToolchainError(
                f"llama-bench sees no Vulkan device with {DEVICES_VAR}={self.env[DEVICES_VAR]}"
            )
        return listed[0]

    def _notes(self, setup: PeerSetup, cache: str) -> tuple[str, ...]:
        notes = [
            f"{self.name}: llama-bench decodes {setup.workload.decode_tokens} tokens from an "
            f"empty context, mlcx after its {setup.workload.prompt_tokens}-token prompt; "
            "llama-bench's tokens are random"
        ]
        if not setup.device.startswith(self.device):
            notes.append(
                f"{self.name} ran on {self.device}, mlcx on {setup.device}: set {DEVICES_VAR} "
                "to the Vulkan index of mlcx's adapter"
            )
        if CACHE_TYPES.get(setup.kv_dtype) != cache:
            notes.append(f"{self.name} keeps an f16 KV cache (llama-bench has no {setup.kv_dtype})")
        return tuple(notes)

    def warm_up(self, ids: list[int], workload: Workload) -> None:
        """Nothing to do: llama-bench warms up inside every run."""

    def run(self, ids: list[int], workload: Workload) -> RunTiming:
        timing, self.device = parse_llama_bench(_run(self.argv, self.env), workload)
        return timing
