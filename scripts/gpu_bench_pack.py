#!/usr/bin/env python3
"""Packs what scripts/gpu-bench.sh needs on a GPU machine that reaches nothing outside itself.

Run here (the CPU machine, this repo's root, the project's venv). The device tool carries the
working tree plus at most 8 ignored paths, 64 MiB in all, per call; what the run needs is
about 200 MB (TVM with its compiler, the default model's GGUF, llama-bench), so it is one
xz-compressed tar split into parts of .gpu/pN, each carried by one call; the machine keeps
what earlier calls left while it stays warm (30 s after a call), and gpu-bench.sh runs the
benchmark once every part is there. The payload:

    site/tvm                 the installed TVM package (py3-none: any Python), 3rdparty/src cut
    wheels/*.whl             cp312 apache-tvm-ffi (the pinned version), gguf, llguidance, the
                             CLI's typer/pydantic, wgpu (at the versions installed here)
    lib/libvulkan.so.1       the Vulkan loader, for wgpu on the GPU's Vulkan driver
    cache/models/...         the default model's GGUF, where mlcx's preset looks for it
    cache/peers/llama.cpp-cuda-*/bin/llama-bench   from scripts/build-llamacpp-cuda.sh, if built
    expected.json            greedy tokens of the cpu artifact of the default model, for a prompt

Prints the device calls to make, in order.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
CARRY_LIMIT = 64 * MIB
PROMPT = "The capital of France is Paris. The three largest cities in France are"
MAX_TOKENS = 32
# What `mlcx bench` imports that the GPU machine's image lacks (gguf, llguidance, pydantic,
# which typer >= 0.2x imports) or may hold at another version (typer, click, rich): carried
# at the versions installed here, the ones the suite ran with.
WHEELS = [
    "gguf",
    "llguidance",
    "typer",
    "click",
    "rich",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "annotated-doc",
    "shellingham",
    # the WebGPU tile measurement: wgpu-native on the GPU's Vulkan driver
    "wgpu",
    "cffi",
    "pycparser",
    "rendercanvas",
]
# The Vulkan loader (Debian's libvulkan1) that wgpu-native opens; the GPU machine's image has
# the NVIDIA driver's ICD but maybe no loader.
VULKAN_LOADER = "libvulkan1"
DEVICE_PYTHON = "3.12"


def _run(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, **kw)


def _tree_bytes() -> int:
    """What travels besides the parts: tracked and untracked-not-ignored files."""
    files = _run(
        "git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z", capture_output=True
    ).stdout.split(b"\0")
    return sum(
        (ROOT / f.decode()).stat().st_size for f in files if f and (ROOT / f.decode()).is_file()
    )


def _copy_tvm(site: Path) -> None:
    import tvm

    src = Path(tvm.__file__).parent
    skip = shutil.ignore_patterns("__pycache__", "3rdparty", "src", "include")
    shutil.copytree(src, site / "tvm", ignore=skip)


def _wheels(out: Path, python: str) -> None:
    """The pinned tvm-ffi (pyproject) and what mlcx imports that the GPU machine lacks."""
    from importlib.metadata import version

    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = next(d for d in deps if d.startswith("apache-tvm-ffi=="))
    platforms = []
    for n in (17, 24, 27, 28, 31, 34, 35):
        platforms += ["--platform", f"manylinux_2_{n}_x86_64"]
    for req in [pinned, *(f"{name}=={version(name)}" for name in WHEELS)]:
        _run(
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            python,
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(out),
            req,
        )


def _vulkan_loader(lib: Path) -> None:
    """libvulkan.so.1 from the distribution's package, into `lib` (LD_LIBRARY_PATH there)."""
    with tempfile.TemporaryDirectory(prefix="vulkan-") as tmp:
        _run("apt-get", "download", "-q", VULKAN_LOADER, cwd=tmp, stdout=subprocess.DEVNULL)
        [deb] = Path(tmp).glob("*.deb")
        _run("dpkg-deb", "-x", str(deb), f"{tmp}/root")
        lib.mkdir(parents=True)
        for so in Path(tmp, "root").rglob("libvulkan.so.1*"):
            shutil.copy2(so, lib / so.name, follow_symlinks=True)


def _default_gguf() -> Path:
    from mlcx.frontends.source import resolve_path

    return resolve_path("smollm2-135m")


def _expected(out: Path) -> None:
    """Greedy tokens of the default model's cpu artifact (compiled here if not cached)."""
    result = _run(
        sys.executable,
        "-m",
        "mlcx",
        "generate",
        "smollm2-135m",
        "-p",
        PROMPT,
        "--max-tokens",
        str(MAX_TOKENS),
        "--temperature",
        "0",
        "--json",
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    got = json.loads(result.stdout.strip().splitlines()[-1])
    out.write_text(json.dumps({"prompt": PROMPT, "max_tokens": MAX_TOKENS, "cpu": got}))


def _llama_bench(cache: Path) -> Path | None:
    from mlcx.bench.peers.llamacpp_cuda import BUILD

    binary = BUILD.bin_dir() / "llama-bench"
    if not binary.is_file():
        return None
    dest = cache / BUILD.bin_dir().relative_to(BUILD.bin_dir().parents[2])
    dest.mkdir(parents=True)
    shutil.copy2(binary, dest / "llama-bench")
    arch = BUILD.bin_dir() / "arch"
    if arch.is_file():
        shutil.copy2(arch, dest / "arch")
    return dest / "llama-bench"


def _split(stream: Path, out: Path, part_bytes: int) -> list[Path]:
    if out.exists():
        shutil.rmtree(out)
    data_size = stream.stat().st_size
    parts, index = [], 0
    with stream.open("rb") as f:
        while chunk := f.read(part_bytes):
            part = out / f"p{index + 1}"
            part.mkdir(parents=True)
            (part / f"payload.{index:03d}").write_bytes(chunk)
            parts.append(part)
            index += 1
    digests = {
        f"p{i + 1}/payload.{i:03d}": hashlib.sha256(
            (p / f"payload.{i:03d}").read_bytes()
        ).hexdigest()
        for i, p in enumerate(parts)
    }
    manifest = {"parts": len(parts), "bytes": data_size, "sha256": digests}
    for part in parts:
        (part / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu")
    parser.add_argument("--no-expected", action="store_true", help="skip the cpu greedy run")
    parser.add_argument(
        "--python", default=DEVICE_PYTHON, help="the device's Python (wheels are for it)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpu-pack-") as tmp:
        payload = Path(tmp) / "payload"
        (payload / "site").mkdir(parents=True)
        _copy_tvm(payload / "site")
        _wheels(payload / "wheels", args.python)
        _vulkan_loader(payload / "lib")
        gguf = _default_gguf()
        models = payload / "cache" / "models" / gguf.parent.name
        models.mkdir(parents=True)
        shutil.copy2(gguf, models / gguf.name)
        peer = _llama_bench(payload / "cache")
        if not args.no_expected:
            _expected(payload / "expected.json")
        stream = Path(tmp) / "payload.tar.xz"
        with stream.open("wb") as out:
            tar = subprocess.Popen(
                ["tar", "-C", str(payload), "-cf", "-", "."], stdout=subprocess.PIPE
            )
            _run("xz", "-T2", "-6", "-c", stdin=tar.stdout, stdout=out)
            if tar.wait():
                sys.exit("tar failed")
        part_bytes = CARRY_LIMIT - _tree_bytes() - 2 * MIB
        parts = _split(stream, args.out, part_bytes)
    print(
        f"payload {sum(p.stat().st_size for q in parts for p in q.iterdir()) / MIB:.0f} MiB "
        f"in {len(parts)} parts of <= {part_bytes / MIB:.0f} MiB under {args.out}"
    )
    print("llama-bench:", peer or "not built (scripts/build-llamacpp-cuda.sh): mlcx runs alone")
    rel = os.path.relpath(args.out.resolve(), ROOT)
    print("device calls, one after another (each within 30 s of the last, or the machine")
    print("goes back and the parts it held are lost), every one the same command:")
    for part in parts:
        print(
            f'  run(command="bash scripts/gpu-bench.sh", carry=["{rel}/{part.name}"], '
            "timeout_s=600)"
        )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
