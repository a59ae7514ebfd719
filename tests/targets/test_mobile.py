"""The phone targets' libraries: iphone's .a holds Mach-O arm64 (iOS) objects with the Metal
kernels embedded; android's .a and .so are ELF aarch64 with OpenCL kernels that parse as
OpenCL C. Every symbol carries the system-lib prefix so several models link side by side."""

from __future__ import annotations

import re
import subprocess

import pytest

from mlcx.targets.library_blob import DeviceModule
from mlcx.targets.mobile import DEFAULT_PREFIX
from mlcx.targets.toolchain import find_tool
from tests.support.tiny_models import TinySpec
from tests.targets.binaries import (
    CPU_TYPE_ARM64,
    EM_AARCH64,
    archive_members,
    blob_at,
    elf_header,
    elf_symbols,
    launcher_symbols,
    llvm,
    macho,
)

PREFIX = DEFAULT_PREFIX  # package tests cover prefixes of their own


@pytest.fixture(scope="module")
def built(compiled):
    return lambda target: compiled(TinySpec(), "q4f16", target=target)


def _blob_symbol(prefix: str, macho_object: bool) -> str:
    return ("_" if macho_object else "") + f"{prefix}__tvm_ffi__library_bin"


def test_iphone_archive_holds_ios_arm64_objects(built, tmp_path):
    archive = built("iphone") / "model-iphone.a"
    assert archive.read_bytes().startswith(b"!<arch>\n#1/")  # BSD names, as Apple's ld reads
    members = archive_members(archive, tmp_path)
    assert [m.name for m in members] == [f"{PREFIX}devc.o", f"{PREFIX}lib0.o"]
    for member in members:
        info = macho(member.read_bytes())
        assert (info.cputype, info.filetype, info.platform) == (CPU_TYPE_ARM64, "OBJECT", "ios")
        headers = llvm("llvm-objdump", "--macho", "--private-headers", str(member))
        assert re.search(r"MH_MAGIC_64\s+ARM64\s+ALL\s+\S+\s+OBJECT", headers)


def test_iphone_archive_embeds_the_metal_kernels(built, tmp_path):
    members = archive_members(built("iphone") / "model-iphone.a", tmp_path)
    data = members[0].read_bytes()
    blob = blob_at(data, macho(data).symbols[_blob_symbol(PREFIX, macho_object=True)])
    assert blob.kinds() == ["relax.VMExecutable", "_lib", "metal"]
    metal = DeviceModule.parse("metal", blob.payload("metal"))
    assert metal.kernel_sources and set(metal.kernel_sources) == set(metal.functions)
    assert all(name.startswith(PREFIX) for name in metal.functions)
    host = set(llvm("llvm-nm", "-g", "--defined-only", "-j", str(members[1])).split())
    assert launcher_symbols(metal.functions, leading="_") <= host


def test_android_libraries_are_elf_aarch64(built, tmp_path):
    artifact = built("android")
    for member in archive_members(artifact / "model-android.a", tmp_path):
        assert elf_header(member.read_bytes()).machine == EM_AARCH64
        assert elf_header(member.read_bytes()).type == "REL"
    shared = (artifact / "model-android.so").read_bytes()
    assert (elf_header(shared).machine, elf_header(shared).type) == (EM_AARCH64, "DYN")
    assert "file format elf64-littleaarch64" in llvm(
        "llvm-objdump", "-f", str(artifact / "model-android.so")
    )


def test_android_so_exports_the_model_and_embeds_opencl(built):
    artifact = built("android")
    so = artifact / "model-android.so"
    exported = set(llvm("llvm-nm", "-D", "--defined-only", "-j", str(so)).split())
    assert _blob_symbol(PREFIX, macho_object=False) in exported
    data = so.read_bytes()
    blob = blob_at(data, elf_symbols(data)[_blob_symbol(PREFIX, macho_object=False)])
    opencl = DeviceModule.parse("opencl", blob.payload("opencl"))
    assert opencl.fmt == "cl"
    assert opencl.code.decode() == (artifact / "model-android.cl").read_text()
    assert launcher_symbols(opencl.functions) <= exported


def test_android_opencl_kernels_parse_as_opencl_c(built):
    """clang's OpenCL front end type-checks the kernels TVM generated (OpenCL C 1.2 with the
    standard headers); it is the compiler a phone's driver would run on them."""
    source = built("android") / "model-android.cl"
    cmd = [find_tool("clang"), "-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header"]
    result = subprocess.run([*cmd, "-fsyntax-only", str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert source.read_text().count("__kernel void") >= 10
