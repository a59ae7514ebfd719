"""The LLVM tools that turn TVM's object files into Apple and Android libraries, found on PATH.

TVM emits Mach-O and ELF objects for any triple by itself; linking and archiving them needs
clang (driver), lld (ld64.lld for Mach-O, ld.lld for ELF) and llvm-ar. Debian ships them
versioned (`ld64.lld-14`) and only sometimes unversioned, so both spellings are searched.
A missing tool raises ToolchainError naming the Debian package that provides it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mlcx.errors import ToolchainError

SETUP_HINT = "scripts/setup-system.sh installs every tool mlcx's targets use"
_VERSIONS = range(25, 13, -1)


@dataclass(frozen=True)
class Tool:
    name: str
    debian_package: str
    purpose: str


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        Tool("clang", "clang", "drive the Apple and Android links"),
        Tool("ld64.lld", "lld", "link Mach-O (Apple) libraries"),
        Tool("ld.lld", "lld", "link ELF (Android) libraries"),
        Tool("llvm-ar", "llvm", "write static libraries (.a)"),
        Tool("nvcc", "nvidia-cuda-toolkit", "compile CUDA kernels ahead of time"),
    ]
}


def _candidates(name: str) -> list[str]:
    return [name] + [f"{name}-{v}" for v in _VERSIONS]


def _beside_clang(name: str) -> str | None:
    """lld's Mach-O flavour often lives only in clang's own LLVM bin directory."""
    clang = which("clang")
    if clang is None:
        return None
    path = Path(os.path.realpath(clang)).parent / name
    return str(path) if path.exists() else None


def which(name: str) -> str | None:
    for candidate in _candidates(name):
        found = shutil.which(candidate)
        if found:
            return found
    return _beside_clang(name) if name.endswith("lld") else None


def find_tool(name: str) -> str:
    tool = TOOLS[name]
    found = which(name)
    if found is None:
        raise ToolchainError(
            f"{name} is needed to {tool.purpose} but is not installed; install the Debian "
            f"package '{tool.debian_package}' (apt-get install {tool.debian_package}; "
            f"{SETUP_HINT})"
        )
    return found


def require(*names: str) -> None:
    """Fail before a long build rather than after it."""
    for name in names:
        find_tool(name)


def run_tool(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if result.returncode:
        detail = (result.stderr or result.stdout).strip()[-2000:]
        raise ToolchainError(
            f"{what} failed ({Path(cmd[0]).name} exit {result.returncode}):\n{detail}"
        )


def archive(output: Path, objects: list[Path], fmt: str = "gnu") -> None:
    """A static library of `objects` with a symbol index; `fmt` "darwin" for Apple linkers,
    which expect BSD-style archives."""
    output.unlink(missing_ok=True)
    cmd = [find_tool("llvm-ar"), f"--format={fmt}", "rcs", str(output), *map(str, objects)]
    run_tool(cmd, "llvm-ar")


def merge_archives(output: Path, archives: list[Path], fmt: str = "gnu") -> None:
    """One static library holding every member of `archives`."""
    with tempfile.TemporaryDirectory() as tmp:
        members = []
        for index, lib in enumerate(archives):
            folder = Path(tmp) / str(index)
            folder.mkdir()
            run_tool([find_tool("llvm-ar"), "x", str(lib.resolve())], "llvm-ar x", cwd=folder)
            members += sorted(folder.iterdir())
        archive(output, members, fmt)


def link_macho_dylib(output: Path, objects: list[Path], triple: str, install_name: str) -> None:
    """A Mach-O dylib. TVM runtime symbols stay undefined and bind when the host process
    (which has loaded the TVM runtime) dlopens it, so no Apple SDK is needed to link."""
    cmd = [
        find_tool("clang"),
        f"--target={triple}",
        f"--ld-path={find_tool('ld64.lld')}",
        "-mlinker-version=609",  # an ld64 this new takes -platform_version, as lld needs
        "-nostdlib",
        "-shared",
        "-Wl,-undefined,dynamic_lookup",
        f"-Wl,-install_name,{install_name}",
        "-o",
        str(output),
        *map(str, objects),
    ]
    run_tool(cmd, f"linking {output.name}")


def link_elf_shared(output: Path, archive_path: Path, triple: str) -> None:
    """An ELF shared object with every member of `archive_path`; TVM runtime symbols are left
    for the dynamic loader (the app loads the TVM runtime first)."""
    cmd = [
        find_tool("clang"),
        f"--target={triple}",
        f"--ld-path={find_tool('ld.lld')}",
        "-nostdlib",
        "-shared",
        f"-Wl,-soname,{output.name}",
        "-Wl,--whole-archive",
        str(archive_path),
        "-Wl,--no-whole-archive",
        "-o",
        str(output),
    ]
    run_tool(cmd, f"linking {output.name}")
