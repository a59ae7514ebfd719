"""Staging and install for scripts/gpu_bench_device.py on the bare GPU machine (stdlib only):
the parts scripts/gpu_bench_pack.py packed arrive one device call each under .gpu/pN, checked
by their sha256; once all are here the payload is unpacked and its wheels installed
(--no-index) into a site folder beside TVM."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

# where the GPU machine's image keeps the NVIDIA driver's Vulkan ICD (its loader may not look)
NVIDIA_ICD = Path("/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json")


def stage(carry: Path, say: Callable[..., None]) -> dict | None:
    """The manifest once every part is under `carry`, else None (after saying what is missing)."""
    manifests = sorted(carry.glob("p*/manifest.json"))
    if not manifests:
        sys.exit(f"no parts under {carry}: run scripts/gpu_bench_pack.py on the CPU machine")
    manifest = json.loads(manifests[0].read_text())
    have, missing = [], []
    for name, digest in manifest["sha256"].items():
        path = carry / name
        ok = path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
        (have if ok else missing).append(name.split("/")[0])
    if missing:
        say(
            f"staged {len(have)} of {manifest['parts']} parts ({', '.join(have)}); carry "
            f"{', '.join(missing)} next, within 30 s of this call"
        )
        return None
    return manifest


def unpack(manifest: dict, carry: Path, work: Path) -> Path:
    payload = work / "payload"
    if (payload / ".done").exists():
        return payload
    shutil.rmtree(work, ignore_errors=True)
    payload.mkdir(parents=True)
    stream = work / "payload.tar.xz"
    with stream.open("wb") as out:
        for name in manifest["sha256"]:
            out.write((carry / name).read_bytes())
    with tarfile.open(stream, "r:xz") as tar:
        tar.extractall(payload, filter="tar")
    stream.unlink()
    (payload / ".done").touch()
    return payload


def _library_dirs() -> list[str]:
    """Folders of the CUDA runtime and cuBLAS 13 (the toolkit's, or PyPI's nvidia packages)."""
    found = []
    roots = [Path("/usr/local"), Path("/usr/lib/x86_64-linux-gnu"), Path(sys.prefix)]
    for root in roots:
        for pattern in ("**/libcudart.so.13*", "**/libcublas.so.13*"):
            for lib in root.glob(pattern):
                if str(lib.parent) not in found:
                    found.append(str(lib.parent))
    return found


def install(payload: Path, root: Path) -> tuple[dict[str, str], str | None]:
    """(the environment mlcx runs in, the packed llama-bench or None)."""
    site = payload / "site"
    wheels = sorted((payload / "wheels").glob("*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--upgrade",
            "--target",
            str(site),
            *map(str, wheels),
        ],
        check=True,
    )
    cache = payload / "cache"
    bench = next(cache.glob("peers/llama.cpp-cuda-*/bin/llama-bench"), None)
    if bench is not None:
        bench.chmod(0o755)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(root)])
    env["MLCX_CACHE"] = str(cache)
    env["PYTHONUNBUFFERED"] = "1"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [*_library_dirs(), str(payload / "lib"), *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
    )
    if NVIDIA_ICD.is_file() and "VK_DRIVER_FILES" not in env:
        env["VK_DRIVER_FILES"] = str(NVIDIA_ICD)
    return env, str(bench) if bench else None
