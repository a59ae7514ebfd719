"""llama.cpp peers built from source: where a flavor's binaries live in the mlcx cache, and
running its build script (scripts/build-llamacpp-<flavor>.sh) when asked to."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mlcx.bench.peers.llamacpp_flags import cmake_args, cpu_flags
from mlcx.cache import cache_dir
from mlcx.errors import ToolchainError

VERSION = "0.3.36"  # of llama-cpp-python, whose sdist the scripts build
# the build scripts ship in the wheel (scripts/ of a checkout links to them)
SCRIPTS = Path(__file__).resolve().parent / "peer_builds"


@dataclass(frozen=True)
class LlamaCppBuild:
    flavor: str  # "cpu", "vulkan": names the script, the cache folder and the log
    what: str  # what the build makes, for the user
    build_time: str
    script: Path = field(default=Path())

    def __post_init__(self) -> None:
        if self.script == Path():
            object.__setattr__(self, "script", SCRIPTS / f"build-llamacpp-{self.flavor}.sh")

    @property
    def name(self) -> str:
        return f"llama.cpp-{self.flavor}"

    def bin_dir(self) -> Path:
        return cache_dir() / "peers" / f"{self.name}-{VERSION}" / "bin"

    def ensure(self, binary: str, build: bool, say) -> Path:
        """The path of `binary`, built first when missing and `build` is set."""
        path = self.bin_dir() / binary
        if os.access(path, os.X_OK):
            return path
        if not build:
            raise ToolchainError(
                f"{self.name} is not built ({path} is missing): pass --build-peer to build it "
                f"now ({self.build_time}), or run {self.script}"
            )
        return self.build(say) / binary

    def build(self, say) -> Path:
        """Run the build script (its output goes to a log file); the folder of the binaries."""
        if not self.script.is_file():
            raise ToolchainError(
                f"{self.script.name} is missing from this mlcx install ({self.script.parent}); "
                "reinstall mlcx"
            )
        log = cache_dir() / "peers" / f"build-llamacpp-{self.flavor}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        say(f"building {self.what} ({self.build_time}); log: {log}")
        env = {
            **os.environ,
            "MLCX_CACHE": str(cache_dir()),
            "LLAMA_CPP_PYTHON_VERSION": VERSION,
            "GGML_CPU_FLAGS": " ".join(cmake_args(cpu_flags())),
        }
        with log.open("w") as out:
            script = ["bash", str(self.script)]
            result = subprocess.run(script, stdout=subprocess.PIPE, stderr=out, env=env)
        if result.returncode:
            tail = (log.read_text().strip().splitlines() or ["no output"])[-1]
            raise ToolchainError(
                f"building {self.name} failed (exit {result.returncode}): {tail}; see {log}"
            )
        return Path(result.stdout.decode().strip().splitlines()[-1])
