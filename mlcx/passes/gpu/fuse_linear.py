"""Relax pass: every linear layer becomes mlcx's GPU linear kernel (GEMV for a few tokens, a
tiled GEMM for more), with the SwiGLU that produces its input and the residual add that consumes
its output fused in when those intermediates have no other user. Linears whose format the GPU
kernels do not read keep the TE compute, which the dlight rules schedule."""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear
from mlcx.kernels.gpu.weight_reader import GpuWeightReader, supports
from mlcx.passes.linear_match import (
    Block,
    LinearRewriter,
    residual_add,
    swiglu_input,
)


class _Fuser(LinearRewriter):
    def __init__(self, mod: tvm.IRModule, cfg: GpuConfig):
        super().__init__(mod, lambda spec: build_gpu_linear(spec, cfg))

    def plan(self, binding, info: Block, adds: dict):
        found = self.linear(binding)
        if found is None:
            return None
        dtype = str(found.x.ty.dtype)
        features, out_features = found.features
        if str(found.var.ty.dtype) != dtype or not supports(found.fmt, features):
            return None
        gate_up = swiglu_input(info.sole(found.x), info)
        residual = residual_add(found.var, info, adds)
        spec = GpuLinearSpec(
            found.fmt, features, out_features, dtype, residual is not None, gate_up is not None
        )
        types = _kernel_types(found.fmt, spec)
        planes = [_as_kernel_reads(w, ty) for w, ty in zip(found.weights, types, strict=True)]
        x = gate_up if gate_up is not None else found.x
        return self.call(spec, [x, *planes], found, residual)


def _kernel_types(fmt, spec: GpuLinearSpec) -> list[tuple[tuple[int, ...], str]]:
    specs = GpuWeightReader(fmt, spec.in_features).param_specs(spec.out_features)
    return [specs[s] for s in fmt.suffixes]


def _as_kernel_reads(weight: relax.Expr, kernel_type) -> relax.Expr:
    """The weight plane as the kernel declares it: 8-bit codes reinterpreted as uint32 words
    (a view of the same bytes, no copy)."""
    shape, dtype = kernel_type
    if str(weight.ty.dtype) == dtype:
        return weight
    return relax.op.memory.view(weight, list(shape), dtype)


def fuse_linear_gpu(cfg: GpuConfig) -> tvm.transform.Pass:
    return _Fuser.module_pass("mlcx.FuseLinearGPU", cfg)
