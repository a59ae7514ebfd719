"""Relax pass: every linear layer becomes one hand-written CPU kernel with its neighbours fused.

Matches, in each dataflow block, a call to a PrimFunc carrying the `mlcx.linear` annotation
(mlcx.kernels.linear) and replaces it with a kernel from `linear_kernels`, absorbing
- the RMSNorm or SwiGLU (silu(gate) * up of a 2-way split) that produced its input, and
- the residual add that consumes its output,
when those intermediate values have no other user. Dead bindings and the replaced TE
functions are removed afterwards by dead-code elimination.
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_kernels import build_linear, can_build
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.passes.linear_match import (
    Block,
    LinearRewriter,
    is_op,
    residual_add,
    swiglu_input,
)


def rmsnorm_rows(value, features: int):
    """(RMSNorm row source, its Relax inputs) for an rms_norm over the last axis, else None."""
    attrs = value.attrs
    if [int(a) for a in attrs.axes] not in ([-1], [1]):
        return None
    return RmsNormRows(features, float(attrs.epsilon)), [value.args[0], value.args[1]]


def swiglu_rows(value, block: Block, features: int):
    """(SwiGLU row source, [gate_up]) for silu(gate) * up of a split gate_up, else None."""
    gate_up = swiglu_input(value, block)
    return (SwiGluRows(features), [gate_up]) if gate_up is not None else None


def _shared_norm(x, block: Block):
    """The RMSNorm bound to x when several linears read it (the parts of a stacked weight):
    each fuses its own copy, which costs a pass over one row, not a kernel launch."""
    value = block.values.get(x) if isinstance(x, relax.DataflowVar) else None
    return value if is_op(value, "relax.nn.rms_norm") else None


def _source(x, block: Block, features: int):
    """(row source, its Relax inputs) for the linear input x."""
    value = block.sole(x)
    if value is None:
        value = _shared_norm(x, block)
    found = None
    if is_op(value, "relax.nn.rms_norm"):
        found = rmsnorm_rows(value, features)
    elif is_op(value, "relax.multiply"):
        found = swiglu_rows(value, block, features)
    return found or (PlainRows(features), [x])


class _Fuser(LinearRewriter):
    def __init__(self, mod: tvm.IRModule, cfg: KernelConfig):
        super().__init__(mod, lambda spec: build_linear(spec, cfg))
        self.cfg = cfg

    def plan(self, binding, info: Block, adds: dict):
        found = self.linear(binding)
        if found is None or found.x.ty.dtype != "float32" or found.var.ty.dtype != "float32":
            return None
        features, out_features = found.features
        source, inputs = _source(found.x, info, features)
        residual = residual_add(found.var, info, adds)
        spec = LinearSpec(source, found.fmt, out_features, residual is not None)
        if not can_build(spec, self.cfg):
            return None
        return self.call(spec, [*inputs, *found.weights], found, residual)


def fuse_linear(cfg: KernelConfig) -> tvm.transform.Pass:
    return _Fuser.module_pass("mlcx.FuseLinearCPU", cfg)
