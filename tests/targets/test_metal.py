"""The metal target's artifact: a Mach-O arm64 dylib for macOS whose entry symbols are the ones
TVM's loader looks up, with the Metal kernel source embedded."""

from __future__ import annotations

import re

import pytest

from mlcx.targets.library_blob import DeviceModule
from mlcx.targets.metal import LIBRARY, SOURCE
from tests.support.tiny_models import TinySpec
from tests.targets.binaries import CPU_TYPE_ARM64, blob_at, launcher_symbols, llvm, macho

# Runtime symbols the dylib leaves to the process that loads it (TVM FFI, dyld).
ALLOWED_UNDEFINED = re.compile(r"_TVMFFI\w+|dyld_stub_binder")


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(TinySpec(), "q4f16", target="metal")


@pytest.fixture(scope="module")
def dylib(artifact):
    return artifact / LIBRARY


@pytest.fixture(scope="module")
def metal_module(dylib) -> DeviceModule:
    data = dylib.read_bytes()
    blob = blob_at(data, macho(data).symbols["___tvm_ffi__library_bin"])
    assert blob.kinds() == ["relax.VMExecutable", "_lib", "metal"]
    return DeviceModule.parse("metal", blob.payload("metal"))


def test_dylib_is_macho_arm64_for_macos(dylib):
    info = macho(dylib.read_bytes())
    assert (info.cputype, info.filetype, info.platform) == (CPU_TYPE_ARM64, "DYLIB", "macos")
    headers = llvm("llvm-objdump", "--macho", "--private-headers", str(dylib))
    assert re.search(r"MH_MAGIC_64\s+ARM64\s+ALL\s+\S+\s+DYLIB", headers)
    assert "@rpath/model-metal.dylib" in headers  # LC_ID_DYLIB: found through the app's rpath
    assert "LC_CODE_SIGNATURE" in headers  # arm64 macOS refuses unsigned code


def test_dylib_exports_the_entry_symbols(dylib, metal_module):
    """TVM's loader reads __tvm_ffi__library_bin, and the VM calls each kernel's launcher."""
    exported = set(llvm("llvm-nm", "-g", "--defined-only", "-j", str(dylib)).split())
    assert "___tvm_ffi__library_bin" in exported
    assert launcher_symbols(metal_module.functions, leading="_") <= exported
    undefined = llvm("llvm-nm", "-u", "-j", str(dylib)).split()
    assert all(ALLOWED_UNDEFINED.fullmatch(name) for name in undefined), undefined


def test_metal_source_is_embedded_for_every_kernel(artifact, metal_module):
    assert metal_module.fmt == "metal"
    assert set(metal_module.kernel_sources) == set(metal_module.functions)
    written = (artifact / SOURCE).read_text()
    for name, source in metal_module.kernel_sources.items():
        assert "#include <metal_stdlib>" in source
        assert re.search(rf"kernel void {name}\(", source)
        assert f"kernel void {name}(" in written
