"""The cuda target's artifact, read back byte by byte: a host shared library whose embedded
CUDA module holds the kernels (as a fatbin when nvcc is on PATH, else as CUDA source)."""

from __future__ import annotations

import re

import pytest
import tvm
import tvm_ffi

from mlcx.compile.model import CompileRequest
from mlcx.passes.gpu.cuda_graph import CAPTURE_BUILTINS
from mlcx.targets import llvm_objects
from mlcx.targets.base import BuildOptions
from mlcx.targets.cuda import DEFAULT_ARCH, LIBRARY, SOURCE, CudaTarget, resolve_arch
from mlcx.targets.cuda_kernels import compile_fatbin
from mlcx.targets.library_blob import DeviceModule
from mlcx.targets.toolchain import which
from tests.support.compile_cache import compile_model
from tests.support.tiny_models import TinySpec
from tests.targets.binaries import (
    EM_CUDA,
    blob_at,
    cubin_sm,
    elf_header,
    elf_symbols,
    fatbin_entries,
)

ARCH = DEFAULT_ARCH  # what CI (no GPU, no --arch) compiles for
needs_nvcc = pytest.mark.skipif(which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(TinySpec(), "q4f16", target="cuda")


@pytest.fixture(scope="module")
def cuda_module(artifact) -> DeviceModule:
    data = (artifact / LIBRARY).read_bytes()
    blob = blob_at(data, elf_symbols(data)["__tvm_ffi__library_bin"])
    assert blob.kinds() == ["relax.VMExecutable", "_lib", "cuda"]
    return DeviceModule.parse("cuda", blob.payload("cuda"))


def _defined_kernels(source: str) -> set[str]:
    pattern = r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\('
    return set(re.findall(pattern, source))


def test_arch_comes_from_option_then_local_gpu_then_default(monkeypatch):
    monkeypatch.setattr("mlcx.targets.cuda._local_arch", lambda: None)
    assert resolve_arch(None) == DEFAULT_ARCH
    monkeypatch.setattr("mlcx.targets.cuda._local_arch", lambda: "sm_89")
    assert resolve_arch(None) == "sm_89" and resolve_arch("sm_75") == "sm_75"
    assert CudaTarget().tvm_target(BuildOptions(gpu_arch="sm_90")).arch == "sm_90"
    with pytest.raises(ValueError, match="sm_80"):
        resolve_arch("ampere")


def test_library_is_a_host_shared_library(artifact):
    header = elf_header((artifact / LIBRARY).read_bytes())
    assert header.type == "DYN" and header.machine == 62  # x86-64 host code


def test_source_defines_every_kernel_of_the_launch_table(artifact, cuda_module):
    source = (artifact / SOURCE).read_text()
    assert cuda_module.functions and set(cuda_module.functions) == _defined_kernels(source)
    for tags in cuda_module.functions.values():
        assert all(
            re.fullmatch(r"(blockIdx|threadIdx)\.[xyz]|tirx.use_dyn_shared_memory", t) for t in tags
        )


@needs_nvcc
def test_kernels_are_compiled_ahead_of_time_for_the_arch(cuda_module):
    assert cuda_module.fmt == "fatbin"
    entries = fatbin_entries(cuda_module.code)
    number = int(ARCH.removeprefix("sm_"))
    assert {(e.kind, e.arch) for e in entries} == {("elf", number), ("ptx", number)}
    cubin = next(e.payload for e in entries if e.kind == "elf")
    header = elf_header(cubin)
    assert header.machine == EM_CUDA and cubin_sm(header) == number
    assert set(cuda_module.functions) <= set(elf_symbols(cubin))


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_fatbin_follows_the_requested_arch(arch):
    source = 'extern "C" __global__ void fill(float* x) { x[threadIdx.x] = 1.0f; }'
    entries = fatbin_entries(compile_fatbin(source, arch))
    number = int(arch.removeprefix("sm_"))
    assert {(e.kind, e.arch) for e in entries} == {("elf", number), ("ptx", number)}
    cubin = next(e.payload for e in entries if e.kind == "elf")
    assert cubin_sm(elf_header(cubin)) == number and "fill" in elf_symbols(cubin)


@needs_nvcc
def test_a_kept_fatbin_is_read_back_for_the_same_source_only(tmp_path, monkeypatch):
    monkeypatch.setenv(llvm_objects.ENV, str(tmp_path))
    source = 'extern "C" __global__ void fill(float* x) { x[threadIdx.x] = 2.0f; }'
    made = compile_fatbin(source, ARCH)
    assert [p.read_bytes() for p in tmp_path.glob("*.fatbin")] == [made]

    def no_nvcc(*args, **kwargs):
        raise AssertionError("nvcc ran for a kept source")

    monkeypatch.setattr("mlcx.targets.cuda_kernels.nvcc.compile_cuda", no_nvcc)
    assert compile_fatbin(source, ARCH) == made
    with pytest.raises(AssertionError, match="nvcc ran"):
        compile_fatbin(source.replace("2.0f", "3.0f"), ARCH)
    with pytest.raises(AssertionError, match="nvcc ran"):
        compile_fatbin(source, "sm_90")


def test_without_nvcc_the_library_carries_the_source(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr("mlcx.targets.cuda.which", lambda name: None)
    request = CompileRequest(str(tiny_model()), "cuda", "q4f16", output=tmp_path / "art")
    artifact = compile_model(request)  # the tests' cache keys CUDA requests by the nvcc found
    data = (artifact / LIBRARY).read_bytes()
    blob = blob_at(data, elf_symbols(data)["__tvm_ffi__library_bin"])
    module = DeviceModule.parse("cuda", blob.payload("cuda"))
    assert module.fmt == "cuda"
    assert module.code.decode() == (artifact / SOURCE).read_text()


LOADER = "ffi.Module.load_from_bytes.cuda"


@pytest.fixture
def captured_cuda_payload():
    """Stands in for TVM's CUDA runtime (absent without a driver): its loader records the
    bytes TVM's library loader hands it and returns an empty module; its CUDA-graph builtins,
    which the VM looks up when it loads decode, are never called."""
    if LOADER in tvm_ffi.registry.list_global_func_names():
        pytest.skip("a real CUDA runtime is loaded; it loads the library itself")
    captured: list[bytes] = []

    def load(data):
        captured.append(bytes(data))
        return tvm_ffi.system_lib("mlcx_test_stub_")

    def never(*_args):
        raise AssertionError("no CUDA graph runs without a GPU")

    stubs = {LOADER: load, **dict.fromkeys(CAPTURE_BUILTINS, never)}
    for name, func in stubs.items():
        tvm_ffi.register_global_func(name, func)
    yield captured
    for name in stubs:
        tvm_ffi.remove_global_func(name)


def test_tvm_loads_the_library_and_its_vm_functions(artifact, captured_cuda_payload):
    module = tvm.runtime.load_module(str(artifact / LIBRARY))
    vm = tvm.relax.VirtualMachine(module, tvm.cpu())
    assert all(vm[name] is not None for name in ("prefill", "decode", "copy_pages"))
    (payload,) = captured_cuda_payload
    loaded = DeviceModule.parse("cuda", payload)
    assert loaded.fmt == ("fatbin" if which("nvcc") else "cuda")
    assert set(loaded.functions) == _defined_kernels((artifact / SOURCE).read_text())
