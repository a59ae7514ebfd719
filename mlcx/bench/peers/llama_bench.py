"""llama.cpp's own `llama-bench` as a GPU peer (its Vulkan and CUDA backends).

Each rep is one `llama-bench -r 1 -o json` process: a prompt test and a decode test, each after
llama-bench's own warm-up run; loading the model is outside its timings. Not quite the same
work as mlcx's (said in the report): llama-bench's decode test starts from an empty context
where mlcx decodes after its prompt (a little more attention work), its tokens are random, and
it has no f32 KV cache, so it keeps f16 when mlcx's cache is f32.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlcx.bench.peers.peer_setup import PeerSetup
from mlcx.bench.workloads.workload import RunTiming, Workload
from mlcx.errors import MlcxError, ToolchainError

CACHE_TYPES = {"float16": "f16", "bfloat16": "bf16", "int8": "q8_0"}  # llama-bench's -ctk/-ctv


@dataclass(frozen=True)
class LlamaBenchBackend:
    name: str  # the peer's name in mlcx.bench.peers.peers
    label: str  # how `llama-bench --list-devices` names the backend's devices: Vulkan0, CUDA0
    devices_var: str  # the variable that picks devices; the user's value wins over "0"

    def devices(self, listing: str) -> list[str]:
        line = rf"^\s*{self.label}\d+: (.+?) \(\d+ MiB, \d+ MiB free\)\s*$"
        return re.findall(line, listing, re.M)


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


def run_tool(argv: list[str], env: dict[str, str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
    if result.returncode:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise MlcxError(f"{Path(argv[0]).name} failed (exit {result.returncode}): {tail}")
    return result.stdout


class LlamaBenchEngine:
    def __init__(self, backend: LlamaBenchBackend, binary: Path, setup: PeerSetup):
        self.name = backend.name
        w = setup.workload
        cache = CACHE_TYPES.get(setup.kv_dtype, "f16")
        var = backend.devices_var
        self.env = {var: os.environ.get(var, "0")}
        self.argv = [str(binary), "-m", str(setup.gguf), "-ngl", "99", "-t", str(setup.threads)]
        self.argv += ["-p", str(w.prompt_tokens), "-n", str(w.decode_tokens), "-r", "1"]
        self.argv += ["-ctk", cache, "-ctv", cache, "-fa", "1", "-o", "json"]
        self.command = f"{var}={self.env[var]} {shlex.join(self.argv)}"
        listed = backend.devices(run_tool([str(binary), "--list-devices"], self.env))
        if not listed:
            raise ToolchainError(
                f"llama-bench sees no {backend.label} device with {var}={self.env[var]}"
            )
        self.device = listed[0]
        self.notes = self._notes(setup, cache, var)

    def _notes(self, setup: PeerSetup, cache: str, var: str) -> tuple[str, ...]:
        notes = [
            f"{self.name}: llama-bench decodes {setup.workload.decode_tokens} tokens from an "
            f"empty context, mlcx after its {setup.workload.prompt_tokens}-token prompt; "
            "llama-bench's tokens are random"
        ]
        if not setup.device.startswith(self.device):
            notes.append(
                f"{self.name} ran on {self.device}, mlcx on {setup.device}: set {var} to the "
                "index of mlcx's device"
            )
        if CACHE_TYPES.get(setup.kv_dtype) != cache:
            notes.append(f"{self.name} keeps an f16 KV cache (llama-bench has no {setup.kv_dtype})")
        return tuple(notes)

    def warm_up(self, ids: list[int], workload: Workload) -> None:
        """Nothing to do: llama-bench warms up inside every run."""

    def run(self, ids: list[int], workload: Workload) -> RunTiming:
        timing, self.device = parse_llama_bench(run_tool(self.argv, self.env), workload)
        return timing
