"""A new virtual environment, as a newcomer makes one: no extras, nothing from this test run's
own environment (PATH, PYTHONPATH, VIRTUAL_ENV) leaking in; pip's download cache is shared."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


def _system_path() -> list[str]:
    """PATH without the bin/ of the venv running these tests (or one the user activated)."""
    venvs = {Path(sys.prefix) / "bin", Path(os.environ.get("VIRTUAL_ENV", sys.prefix)) / "bin"}
    entries = os.environ.get("PATH", "").split(os.pathsep)
    return [p for p in entries if p and Path(p) not in venvs]


def base_python() -> str:
    """The interpreter this test venv was made from (a venv made from a venv is the same)."""
    return str(Path(sys.base_prefix) / "bin" / "python3")


@dataclass
class FreshVenv:
    root: Path
    extra_path: list[Path] = field(default_factory=list)  # put before the venv's bin/
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, **kw) -> FreshVenv:
        subprocess.run([base_python(), "-m", "venv", str(root)], check=True)
        return cls(root, **kw)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def environ(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("MLCX_", "PYTHON"))}
        keep.pop("VIRTUAL_ENV", None)
        path = [*map(str, self.extra_path), str(self.bin), *_system_path()]
        return {**keep, "PATH": os.pathsep.join(path), "VIRTUAL_ENV": str(self.root), **self.env}

    def shell(self, line: str, cwd: Path, timeout: float = 1500) -> subprocess.CompletedProcess:
        """`line` run by bash exactly as written, as in a shell where this venv is active."""
        return subprocess.run(
            ["bash", "-c", line],
            cwd=cwd,
            env=self.environ(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, args: list[str], cwd: Path) -> subprocess.Popen:
        return subprocess.Popen(
            args,
            cwd=cwd,
            env=self.environ(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
