"""Prefill GEMMs on matrix units, checked without a GPU: the CUDA source of a cuda artifact's
prefill linears holds wmma (tensor-core) instructions and nvcc compiles it for sm_90; the Metal
source holds simdgroup matrix operations; decode keeps mlcx's GEMV. What is not run here: the
tensorized kernels themselves (no CUDA device, no Apple GPU). Their definition (dequantize
block + matmul, which dlight tensorizes) is checked against numpy by running it on the CPU."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm

from mlcx.kernels.gpu.tensor_core import (
    TensorCoreSpec,
    matrix_units,
    supports,
    tensor_core_matmul_te,
    tensorize_works,
)
from mlcx.quantization.formats import format_from_name
from mlcx.targets.base import BuildOptions
from mlcx.targets.toolchain import which
from tests.support.tiny_models import TinySpec
from tests.targets.binaries import blob_at, cubin_sm, elf_header, elf_symbols, fatbin_entries

# wide enough for dlight to tensorize every linear but the head (N and K > 64)
SPEC = TinySpec(hidden=128, intermediate=256)
needs_tensorize = pytest.mark.skipif(
    not tensorize_works(), reason="this apache-tvm-ffi crashes TVM 0.27's Tensorize (pin 0.1.14)"
)


def _kernels(source: str, pattern: str) -> dict[str, str]:
    """kernel name -> body, for the kernels defined in `source`."""
    heads = list(re.finditer(pattern, source))
    ends = [h.start() for h in heads[1:]] + [len(source)]
    return {h.group(1): source[h.start() : end] for h, end in zip(heads, ends, strict=True)}


def test_matrix_units_by_target():
    works = tensorize_works()
    assert matrix_units("cuda", "sm_90", "float16") == works
    assert matrix_units("cuda", "sm_80", "float16") == works
    assert not matrix_units("cuda", "sm_61", "float16")
    assert not matrix_units("cuda", "sm_90", "float32")
    assert matrix_units("metal", "", "float16") == works
    assert not matrix_units("webgpu", "", "float16")
    assert not supports(format_from_name("int4-sym-g32-float16"), 64, 1024)
    assert not supports(format_from_name("int4-sym-g32-float16-t16"), 128, 128)
    assert supports(format_from_name("q4_k"), 256, 256)
    assert not supports(format_from_name("q4_k-t16"), 256, 256)


@pytest.mark.parametrize(
    "name,swiglu",
    [
        ("int4-sym-g32-float16", False),
        ("int4-affine-g32-float16", False),
        ("int8-sym-g32-float32", False),
        ("float16", False),
        ("int4-affine-g32-float16", True),
        ("q4_k", False),
        ("q5_k", False),
        ("q6_k", True),
        ("q5_0", False),
        ("q5_1", False),
    ],
)
def test_the_scheduled_definition_is_the_linear_layer(name, swiglu):
    """The function dlight tensorizes (prefill) or LowBatchGEMV schedules (decode, with the
    SwiGLU of the down projection inside), run unscheduled on the CPU, against numpy."""
    fmt = format_from_name(name)
    n, k, tokens = 96, 256, 5  # k: one K-quant super-block
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.1
    planes = fmt.pack(w)
    reference = fmt.unpack(planes)
    x = rng.standard_normal((tokens, 2 * k if swiglu else k)).astype(np.float16)
    func = tensor_core_matmul_te(TensorCoreSpec(fmt, k, n, "float32", swiglu, swiglu))
    run = tvm.compile(tvm.IRModule({"main": func}), target="llvm")["main"]
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(x, dev)]
    args += [tvm.runtime.tensor(np.asarray(planes[s]), dev) for s in fmt.suffixes]
    out = tvm.runtime.empty((tokens, n), "float16", dev)
    run(*args, out)
    act = x.astype(np.float32)
    if swiglu:
        gate, up = act[:, :k], act[:, k:]
        act = gate / (1 + np.exp(-gate)) * up
    want = act @ np.asarray(reference, np.float32).T
    np.testing.assert_allclose(out.numpy().astype(np.float32), want, atol=2e-2, rtol=1e-2)


@pytest.fixture(scope="module")
def cuda_artifact(compiled):
    return compiled(SPEC, "q4f16", target="cuda", options=BuildOptions(gpu_arch="sm_90"))


@needs_tensorize
def test_cuda_prefill_linears_use_tensor_cores(cuda_artifact):
    source = (cuda_artifact / "model-cuda.cu").read_text()
    kernels = _kernels(source, r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(')
    tensor = {name for name, body in kernels.items() if "wmma::mma_sync" in body}
    assert tensor and all("tc_matmul" in name for name in tensor)
    # every prefill linear but the head (logit rows only) is one: qkv, o, gate/up, down (with
    # the SwiGLU before it inside)
    assert len({re.sub(r"_kernel\d*$", "", n) for n in tensor}) >= 4
    assert any("swiglu" in name for name in tensor)
    # the packed weights are dequantized into shared memory, the matrix loads read it there
    assert all("qweight_ptr" in kernels[name] for name in tensor)
    assert all("__shared__" in kernels[name] or "buf_dyn_shmem" in kernels[name] for name in tensor)
    # decode's linears are dlight's LowBatchGEMV, the head of prefill (logit rows) mlcx's GEMV
    assert any("gemv_dq" in name for name in kernels) and not any("gemv_dq" in n for n in tensor)
    assert any(name.startswith("gpu_linear") for name in kernels)


@needs_tensorize
@pytest.mark.skipif(which("nvcc") is None, reason="nvcc not on PATH")
def test_tensor_core_kernels_compile_to_sm_90_machine_code(cuda_artifact):
    from mlcx.targets.library_blob import DeviceModule

    data = (cuda_artifact / "model-cuda.so").read_bytes()
    blob = blob_at(data, elf_symbols(data)["__tvm_ffi__library_bin"])
    module = DeviceModule.parse("cuda", blob.payload("cuda"))
    cubin = next(e.payload for e in fatbin_entries(module.code) if e.kind == "elf")
    assert cubin_sm(elf_header(cubin)) == 90
    assert any("tc_matmul" in name for name in elf_symbols(cubin))
    sass = _cuobjdump_sass(cuda_artifact)
    if sass is not None:
        assert "HMMA" in sass  # tensor-core multiply-accumulate instructions


def _cuobjdump_sass(artifact) -> str | None:
    import subprocess

    tool = which("cuobjdump")
    if tool is None:
        return None
    result = subprocess.run(
        [tool, "--dump-sass", str(artifact / "model-cuda.so")], capture_output=True, text=True
    )
    return result.stdout if result.returncode == 0 else None


@needs_tensorize
def test_metal_prefill_linears_use_simdgroup_matrices(compiled):
    artifact = compiled(SPEC, "q4f16", target="metal")
    source = (artifact / "model-metal.metal").read_text()
    kernels = _kernels(source, r"kernel void (\w+)\(")
    matrix = {n for n, body in kernels.items() if "simdgroup_multiply_accumulate" in body}
    assert matrix and all("tc_matmul" in name for name in matrix)
    assert all("simdgroup_load" in kernels[name] for name in matrix)


def test_iphone_system_library_builds_with_prefill_on_the_tiled_gemm(compiled):
    """TVM 0.27 cannot prefix a tensorized kernel's symbol for a system library (iphone), so
    that build keeps prefill's linears on mlcx's tiled GEMM; the library must still build."""
    artifact = compiled(SPEC, "q4f16", target="iphone")
    source = next(artifact.glob("*.metal")).read_text()
    kernels = _kernels(source, r"kernel void (\w+)\(")
    assert any("gpu_linear" in name for name in kernels)  # symbols carry the library prefix
    assert not any("simdgroup_multiply_accumulate" in body for body in kernels.values())
