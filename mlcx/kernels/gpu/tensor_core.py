"""Prefill GEMMs on matrix units (CUDA tensor cores, Apple simdgroup matrices) and decode
GEMVs, both as a dequantize block + matmul that a dlight rule schedules.

y [tokens, N] = x [tokens, K] @ W.T over weights in their stored format, written so that
dlight's `gpu.Matmul` rule tensorizes it: the dequantization is its own spatial block, which the
rule computes into the weight tile in shared memory (`dequantize_reindex_shared_dyn`), where the
matrix loads read it; the packed codes and scales are read once per tile, as in MLC-LLM's
FuseDecodeMatmulEwise. One kernel per layer; an epilogue (the residual add) fuses after it.

What the rule needs per target (tvm.s_tir.dlight.gpu.matmul, TVM 0.27):
- cuda, sm >= 70: float16 inputs, float32 accumulation (wmma 16x16x16), N and K > 64;
- metal: float16 inputs and a float16 accumulator (simdgroup_half8x8: its only dtype).
Tensorize needs TVM's JSON serializer (it copies the intrinsic); see `tensorize_works`.
The SwiGLU of a down projection is a block in front of the matmul (both rules inline it into
the activation loads). Decode (cuda): the same definition, scheduled by dlight's LowBatchGEMV
(mlcx.passes.gpu.decode_gemv_rule), the weights dequantized in registers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata

from tvm import te, tirx

from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import DenseFormat, GroupIntFormat, WeightFormat

# dlight leaves dimensions of this size or less to its SIMT schedule (minimal_tensorize_threshold)
MIN_TENSORIZE_DIM = 65
# apache-tvm-ffi releases whose JSON serializer (ToJSONGraph) segfaults under TVM 0.27.0.post1:
# every Tensorize dies in it. 0.1.14.post1 works (pyproject pins it).
BROKEN_FFI = ("0.1.15",)


@functools.cache
def tensorize_works() -> bool:
    """Whether this TVM can tensorize (its tvm-ffi is not one that crashes it)."""
    try:
        version = metadata.version("apache-tvm-ffi")
    except metadata.PackageNotFoundError:
        return False
    return not version.startswith(BROKEN_FFI)


def matrix_units(kind: str, arch: str, dtype: str) -> bool:
    """The target has matrix units the Matmul rule can use for `dtype` activations."""
    if dtype != "float16" or not tensorize_works():
        return False
    if kind == "metal":
        return True
    if kind == "cuda":
        digits = "".join(c for c in arch.removeprefix("sm_") if c.isdigit())
        return bool(digits) and int(digits) >= 70
    return False


def supports(fmt: WeightFormat, in_features: int, out_features: int) -> bool:
    """Formats read in row order (tiled CPU layouts are not), shapes the rule tensorizes."""
    if min(in_features, out_features) < MIN_TENSORIZE_DIM:
        return False
    if isinstance(fmt, DenseFormat):
        return fmt.dtype in ("float16", "float32")
    return isinstance(fmt, GroupIntFormat | BlockFormat) and not fmt.tiled


# Block annotation of the matmul of a decode GEMV (mlcx.passes.gpu.decode_gemv), which survives
# operator fusion: the schedule rule that picks those functions out looks for it.
DECODE_GEMV_ATTR = "mlcx.decode_gemv"


@dataclass(frozen=True)
class TensorCoreSpec:
    fmt: WeightFormat
    in_features: int
    out_features: int
    accumulate: str  # float32 (cuda) or float16 (metal)
    decode: bool = False  # a decode GEMV (dlight's LowBatchGEMV), not a tensor-core GEMM
    swiglu: bool = False  # x is [gate | up]; the input is silu(gate) * up, computed in a block

    @property
    def name(self) -> str:
        fmt = self.fmt.name.replace("-", "_")
        kind = "gemv_dq" if self.decode else "tc_matmul"
        src = "swiglu_" if self.swiglu else ""
        return f"{kind}_{src}{fmt}_{self.accumulate}_{self.in_features}x{self.out_features}"


def _i64(value: int) -> tirx.IntImm:
    return tirx.IntImm("int64", value)


def tensor_core_matmul_te(spec: TensorCoreSpec):
    """The TE function (x, weight planes..., y): the arguments of the linear it replaces."""
    n, k = spec.out_features, spec.in_features
    tokens = tirx.Var("tokens", "int64")
    x = te.placeholder((tokens, _i64(2 * k if spec.swiglu else k)), "float16", name="x")
    inputs = x
    if spec.swiglu:
        x = te.compute(
            (tokens, _i64(k)),
            lambda t, j: inputs[t, j] * te.sigmoid(inputs[t, j]) * inputs[t, j + k],
            name="swiglu",
        )
    planes = {
        suffix: te.placeholder(tuple(_i64(d) for d in shape), dtype, name=suffix)
        for suffix, (shape, dtype) in spec.fmt.param_specs(n, k).items()
    }
    weight = te.compute(
        (_i64(n), _i64(k)),
        lambda i, j: spec.fmt.element(planes, i, j, "float16"),
        name="dequantize",
    )
    red = te.reduce_axis((0, _i64(k)), name="k")
    acc = spec.accumulate
    total = te.compute(
        (tokens, _i64(n)),
        lambda t, i: te.sum(x[t, red].astype(acc) * weight[i, red].astype(acc), axis=red),
        name="matmul",
        attrs={DECODE_GEMV_ATTR: 1} if spec.decode else None,
    )
    y = te.compute(total.shape, lambda t, i: total[t, i].astype("float16"), name="matmul_cast")
    func = te.create_prim_func([inputs, *planes.values(), y])
    return func.with_attr("global_symbol", spec.name)
