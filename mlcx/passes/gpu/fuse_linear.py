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
    is_op,
    linear_format,
    residual_add,
    rewrite_module,
    swiglu_input,
)


class _Fuser:
    def __init__(self, mod: tvm.IRModule, cfg: GpuConfig):
        self.mod = mod
        self.builder = relax.BlockBuilder(mod)
        self.cfg = cfg
        self.kernels: dict[GpuLinearSpec, relax.GlobalVar] = {}

    def kernel(self, spec: GpuLinearSpec) -> relax.GlobalVar:
        if spec not in self.kernels:
            func = build_gpu_linear(spec, self.cfg)
            self.kernels[spec] = self.builder.add_func(func, spec.name)
        return self.kernels[spec]

    def plan(self, binding, info: Block, adds: dict):
        value = binding.value
        if not is_op(value, "relax.call_tir"):
            return None
        fmt = linear_format(self.mod[value.args[0]])
        x, *weights = value.args[1].fields
        dtype = str(x.ty.dtype)
        if fmt is None or str(binding.var.ty.dtype) != dtype:
            return None
        features, out_features = int(x.ty.shape[1]), int(binding.var.ty.shape[1])
        if not supports(fmt, features):
            return None
        gate_up = swiglu_input(info.sole(x), info)
        x = gate_up if gate_up is not None else x
        residual = residual_add(binding.var, info, adds)
        has = residual is not None
        spec = GpuLinearSpec(fmt, features, out_features, dtype, has, gate_up is not None)
        target, extra = (residual[0], [residual[1]]) if residual else (binding.var, [])
        planes = [
            _as_kernel_reads(w, ty) for w, ty in zip(weights, _kernel_types(fmt, spec), strict=True)
        ]
        args = relax.Tuple([x, *planes, *extra])
        return target, relax.call_tir(self.kernel(spec), args, binding.var.ty)


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
    @tvm.transform.module_pass(opt_level=0, name="mlcx.FuseLinearGPU")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        fuser = _Fuser(mod, cfg)
        return rewrite_module(mod, fuser.builder, fuser.plan)

    return _pass
