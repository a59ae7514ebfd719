"""llama.cpp's multimodal CLI (llama-mtmd-cli, tools/mtmd of the llama.cpp that the CPU peer
builds) as the peer of `mlcx bench image`: the same text GGUF and mmproj GGUF, one image, the
encoder's time as llama.cpp itself logs it (the model load and the text prefill left out)."""

from __future__ import annotations

import re
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlcx.bench.peers.llama_server import BUILD
from mlcx.errors import ToolchainError

BINARY = "llama-mtmd-cli"
# "image slice encoded in N ms" (older llama.cpp), "mtmd batch encoding done in N ms" (newer)
_ENCODED = re.compile(r"(?:slice encoded|batch encoding done) in (\d+) ms")
# the text model's chat template: llama.cpp refuses a model without one
TEMPLATES = {"gemma3": "gemma", "qwen2_5_vl": "chatml", "qwen3_vl": "chatml"}


@dataclass(frozen=True)
class MtmdFiles:
    text: Path  # the text model's GGUF
    mmproj: Path
    family: str  # the encoder family (its chat template for llama.cpp)

    def __post_init__(self) -> None:
        for path in (self.text, self.mmproj):
            if not path.is_file():
                raise ValueError(
                    f"{path} is not a file: llama.cpp's mtmd needs the text GGUF "
                    "and the mmproj GGUF the artifact was compiled from"
                )
        if self.family not in TEMPLATES:
            raise ValueError(
                f"no llama.cpp mtmd comparison for {self.family!r} encoders yet "
                f"(known: {', '.join(TEMPLATES)})"
            )


# llama.cpp logs from a worker thread that can exit before the last lines are written (about one
# run in four loses the encode line): a run whose timing line is lost is run again.
_ATTEMPTS = 4


def encode_seconds(binary: Path, files: MtmdFiles, image: Path, threads: int) -> float:
    """One run of llama-mtmd-cli; the encode time it logs."""
    argv = [str(binary), "-m", str(files.text), "--mmproj", str(files.mmproj)]
    argv += ["--image", str(image), "-p", "describe", "-n", "1", "-t", str(threads)]
    argv += ["--chat-template", TEMPLATES[files.family]]
    for _ in range(_ATTEMPTS):
        # the reply of a random model is arbitrary bytes: only the timing lines are read
        result = subprocess.run(argv, capture_output=True, text=True, errors="replace")
        found = _ENCODED.findall(result.stdout + result.stderr)
        if result.returncode or found:
            break
    if result.returncode or not found:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToolchainError(f"{BINARY} failed (exit {result.returncode}): {tail}")
    return sum(int(ms) for ms in found) / 1e3


def mtmd_encode(files: MtmdFiles, image: Path, threads: int, reps: int, build: bool, say) -> float:
    """The median encode time over `reps` runs (each loads the model anew)."""
    binary = BUILD.ensure(BINARY, build, say)
    return statistics.median(encode_seconds(binary, files, image, threads) for _ in range(reps))
