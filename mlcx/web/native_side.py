"""The native side of `mlcx bench web`: the artifact run by wgpu-native in a child process on
the adapter a Vulkan ICD file names (Chromium's own SwiftShader by default), so that browser
and native compute on the same emulated GPU.

A child process because the Vulkan loader reads VK_ICD_FILENAMES once, when wgpu loads it.
Protocol: JSON lines; the child first says {"adapter": name}, then answers each request
{"op": "run", "prompt": ids, "decode": n} or {"op": "chat", "text": t, "max_tokens": n}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlcx.errors import ToolchainError
from mlcx.web.timing import KV_BLOCKS, Answer, Sample

WORKER = "mlcx.web.native_side"


class NativeSide:
    """A running child; `run` and `chat` block until it answers."""

    where = "native"

    def __init__(self, artifact: Path, icd: Path, expect_adapter: str):
        env = {**os.environ, "VK_ICD_FILENAMES": str(icd), "TOKENIZERS_PARALLELISM": "false"}
        started = time.perf_counter()
        # a file, not a pipe: an unread pipe could fill and block the child; closed in close()
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER, str(artifact)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )
        try:
            self.adapter = self._receive()["adapter"]
            if not self.adapter.startswith(expect_adapter):
                raise ToolchainError(
                    f"wgpu-native with VK_ICD_FILENAMES={icd} opened {self.adapter!r}, not "
                    f"{expect_adapter!r}: the comparison needs Chromium's SwiftShader"
                )
        except BaseException:
            self.close()
            raise
        self.ready_s = time.perf_counter() - started  # process start to weights and pipelines

    def run(self, prompt: list[int], decode: int) -> Sample:
        return Sample(**self._ask({"op": "run", "prompt": prompt, "decode": decode}))

    def chat(self, text: str, max_tokens: int) -> Answer:
        return Answer(**self._ask({"op": "chat", "text": text, "max_tokens": max_tokens}))

    def close(self) -> None:
        self.proc.stdin.close()  # the child's loop ends with its input
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.log.close()

    def _ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._receive()

    def _receive(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.log.seek(0)
            tail = self.log.read().strip().splitlines()[-5:]
            raise ToolchainError("the native bench process failed: " + " | ".join(tail))
        reply = json.loads(line)
        if "error" in reply:
            raise ToolchainError(f"the native bench process failed: {reply['error']}")
        return reply


def _timed_stream(llm, prompt, params) -> tuple[float, list[float], list]:
    """(start, each delta's arrival, the deltas) of one request."""
    started = time.perf_counter()
    stamps, deltas = [], []
    for delta in llm.stream(prompt, params):
        stamps.append(time.perf_counter())
        deltas.append(delta)
    return started, stamps, deltas


def _run(llm, request: dict) -> dict:
    from mlcx.runtime.sample.params import SamplingParams

    params = SamplingParams.greedy(max_tokens=request["decode"] + 1, ignore_eos=True)
    started, stamps, deltas = _timed_stream(llm, request["prompt"], params)
    return {
        "prefill_tokens": len(request["prompt"]),
        "prefill_s": stamps[0] - started,
        "decode_tokens": deltas[-1].completion_tokens - 1,  # the first token is prefill's
        "decode_s": stamps[-1] - stamps[0],
    }


def _chat(llm, request: dict) -> dict:
    from mlcx.runtime.sample.params import SamplingParams

    prompt = llm.chat_prompt([{"role": "user", "content": request["text"]}])
    params = SamplingParams.greedy(max_tokens=request["max_tokens"])
    started, stamps, deltas = _timed_stream(llm, prompt, params)
    text = "".join(d.text for d in deltas)
    return {"text": text, "seconds": stamps[-1] - started, "tokens": deltas[-1].completion_tokens}


HANDLERS = {"run": _run, "chat": _chat}


def main(artifact: str) -> None:
    """The child: protocol lines go to the original stdout; anything else written to fd 1
    (drivers, libraries) is sent to stderr."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from mlcx.runtime.api.llm import LLM
    from mlcx.runtime.core.config import EngineConfig

    config = EngineConfig(
        kv_blocks=KV_BLOCKS, max_batch=1, enable_prefix_caching=False, device="vulkan"
    )
    llm = LLM(artifact, config)
    print(json.dumps({"adapter": llm.engine.runner.gpu.adapter_name}), file=out, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = HANDLERS[request["op"]](llm, request)
        except Exception as err:  # reported to the parent, which raises
            reply = {"error": f"{type(err).__name__}: {err}"}
        print(json.dumps(reply), file=out, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
