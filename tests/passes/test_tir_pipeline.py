"""The TIR pipeline "mlcx" skips passes only where they change nothing: every scratch buffer of
a kernel marked EXACT_BUFFERS keeps its shape through TVM's CompactBufferAllocation (which only
rewrites its indices by a 0 offset), and a kernel marked TIDY lowers to the same IR with and
without the passes its mark skips. A marked kernel built beside an unmarked function through the
pipeline computes what the default pipeline's build does."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
import tvm
from tvm import s_tir
from tvm.tirx.compilation_pipeline import get_tir_pipeline

from mlcx.kernels.cpu.attention import copy_pages
from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.lora_shrink import ShrinkSpec, build_lora_shrink
from mlcx.kernels.cpu.paged_attention import paged_attention_cpu
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.experts import GpuExpertsSpec, build_gpu_experts
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear
from mlcx.kernels.kv_layout import kv_pages_shape
from mlcx.kernels.lowering_marks import EXACT_BUFFERS, TIDY
from mlcx.passes import tir_pipeline
from mlcx.quantization.formats import format_from_name

BEFORE_COMPACTION = (
    s_tir.transform.CanonicalizeLoop(),
    s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
    s_tir.transform.ConvertBlocksToOpaque(),
)


# what TVMScript prints a compacted extent with (a bound TVM cannot simplify to the extent)
_PRINTED = SimpleNamespace(
    min=min, max=max, Select=lambda c, a, b: a if c else b, int64=int, int32=int
)


def _allocations(mod: tvm.IRModule) -> list[int]:
    """Every scratch buffer's element count, in order, at sample sizes of the kernel's
    symbolic extents (TVMScript prints a shape as Python arithmetic)."""
    sizes = {"tokens": 7, "nnz": 5, "batch": 3, "T": _PRINTED}
    counts = []
    for text in re.findall(r"T\.alloc_(?:buffer|shared|local)\((.*)\)", mod.script()):
        shape = eval(_first_argument(text), {}, sizes)  # noqa: S307 (TVM's own printout)
        counts.append(int(np.prod(shape if isinstance(shape, tuple) else (shape,))))
    return counts


def _first_argument(text: str) -> str:
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and c in ",)":
            return text[: i + (c == ")")]
    return text


# the CPU linear kernels of an AVX-512 host with two cores
CPU_TARGET = tvm.target.Target({"kind": "llvm", "mcpu": "sapphirerapids", "num-cores": 2})
CPU = KernelConfig.for_target(CPU_TARGET)
CPU_INT8 = KernelConfig.for_target(CPU_TARGET, LinearKernels.INT8)


def _cpu_linear(source, fmt: str, out: int, residual=False, cfg=CPU):
    return build_linear(LinearSpec(source, format_from_name(fmt), out, residual), cfg)


@pytest.mark.parametrize(
    "kernel",
    [
        lambda: paged_attention_cpu(1, 2, 16, "int8", 16, "float16", window=24, sinks=True),
        lambda: _cpu_linear(RmsNormRows(64, 1e-5), "int4-affine-g32-float16", 96, residual=True),
        lambda: _cpu_linear(SwiGluRows(256), "q4_k-t16", 64, cfg=CPU_INT8),
        lambda: _cpu_linear(RmsNormRows(64, 1e-5), "int4-affine-g32-float16-t16", 96),
        lambda: _cpu_linear(PlainRows(256), "iq4_xs-t16", 64, residual=True),
        lambda: _cpu_linear(SwiGluRows(64), "float32", 40),
        lambda: build_expert_linear(
            ExpertSpec(format_from_name("mxfp4-t16"), 4, 2, 64, 32, per_slot=True, swiglu=True),
            CPU,
        ),
        lambda: build_lora_shrink(ShrinkSpec(RmsNormRows(64, 1e-5), 24, 3, "float16", 2)),
        lambda: build_gpu_linear(
            GpuLinearSpec(format_from_name("int4-sym-g32-float16"), 64, 384, "float16"),
            GpuConfig(),
        ),
        lambda: build_gpu_experts(
            GpuExpertsSpec(format_from_name("int4-sym-g32-float16"), 8, 2, 64, 128, "float16"),
            GpuConfig(),
        ),
    ],
    ids=[
        "cpu-attention",
        "cpu-linear-int4",
        "cpu-linear-kquant-int8",
        "cpu-linear-int4-tiled",
        "cpu-linear-iq4",
        "cpu-linear-float",
        "cpu-experts-mxfp4",
        "cpu-lora-shrink",
        "gpu-linear",
        "gpu-experts",
    ],
)
def test_marked_kernels_are_what_compaction_would_leave(kernel):
    func = kernel()
    assert func.attrs[EXACT_BUFFERS]
    mod = tvm.IRModule({"main": func})
    for lower in BEFORE_COMPACTION:
        mod = lower(mod)
    shapes = _allocations(mod)
    assert shapes and _allocations(s_tir.transform.CompactBufferAllocation()(mod)) == shapes


@pytest.mark.parametrize(
    ("kind", "kernel"),
    [
        (
            "webgpu",
            lambda: build_gpu_linear(
                GpuLinearSpec(format_from_name("q4_k"), 256, 32, "float32", residual=True),
                GpuConfig(subgroups=True),
            ),
        ),
        (
            "cuda",
            lambda: build_gpu_linear(
                GpuLinearSpec(
                    format_from_name("int4-sym-g32-float16"), 64, 32, "float16", swiglu=True
                ),
                GpuConfig(gemm_rows=2, gemm_tokens=2),
            ),
        ),
        (
            "metal",
            lambda: build_gpu_experts(
                GpuExpertsSpec(format_from_name("mxfp4"), 4, 2, 64, 32, "float16"), GpuConfig()
            ),
        ),
    ],
    ids=["gpu-linear-kquant", "gpu-linear-swiglu", "gpu-experts-mxfp4"],
)
def test_tidy_kernels_lower_the_same_without_the_passes_they_skip(kind, kernel):
    func = kernel()
    assert func.attrs[TIDY]
    target = tvm.target.Target({"kind": kind, "host": {"kind": "llvm"}})
    mod = tvm.IRModule({"main": func.with_attr("target", target)})
    lowered = []
    for names in (tir_pipeline.skipped(func), tir_pipeline.SKIPS[EXACT_BUFFERS]):
        with tvm.transform.PassContext(opt_level=3, instruments=[tir_pipeline.SkipPasses(names)]):
            lowered.append(get_tir_pipeline("s_tir")[0](mod))
    tvm.ir.assert_structural_equal(lowered[0], lowered[1])


def test_marked_and_unmarked_functions_build_together():
    attention = paged_attention_cpu(1, 2, 8, "float32", 16).with_attr("global_symbol", "attend")
    copy = copy_pages(1, 8, "float32", 16).with_attr("global_symbol", "copy")
    assert EXACT_BUFFERS not in (copy.attrs or {})
    mod = tvm.IRModule({"attend": attention, "copy": copy})
    ours = tvm.tirx.build(mod, target={"kind": "llvm"}, pipeline=tir_pipeline.NAME)
    plain = tvm.tirx.build(mod, target={"kind": "llvm"})
    rng = np.random.default_rng(0)
    shape = tuple(int(x) for x in kv_pages_shape(3, 1, 16, 8))
    pages = rng.standard_normal(shape).astype("float32")
    q = rng.standard_normal((5, 2, 8)).astype("float32")
    args = [np.array(a, "int32") for a in ([0, 5], [0, 2], [2, 0], [4])]
    outputs = []
    for lib in (ours, plain):
        out = tvm.runtime.tensor(np.zeros_like(q))
        tensors = [tvm.runtime.tensor(a) for a in (q, args[0], pages, *args[1:])]
        lib["attend"](*tensors, out)
        moved = tvm.runtime.tensor(pages.copy())
        lib["copy"](moved, tvm.runtime.tensor(np.array([[0, 1]], "int32")))
        outputs.append((out.numpy(), moved.numpy()))
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    np.testing.assert_array_equal(outputs[0][1], outputs[1][1])
    assert np.isfinite(outputs[0][0]).all() and (outputs[0][1][1] == pages[0]).all()
