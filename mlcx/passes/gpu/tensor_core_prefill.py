"""Relax passes: the linear layers of one step function as a dequantize block + matmul
(mlcx.kernels.gpu.tensor_core) that a dlight rule schedules, on targets where it pays.

- `tensor_core_prefill`: prefill's linears over all its new tokens run on matrix units (cuda
  sm >= 70, metal; float16 activations). The head of prefill reads only the logit rows and keeps
  mlcx's kernel, as does decode by default (a handful of rows: tensor cores would pad them).
- `decode_gemv`: decode's linears become dlight's LowBatchGEMV (MLC-LLM's small-batch decode
  GEMV: 4 rows a workgroup row, coalesced weight loads, the dequantization in registers).
Both run before `fuse_linear_gpu`, which turns the remaining linears into mlcx's kernels; the
SwiGLU before a down projection is a block inside it (the rules inline it into the activation
loads), the residual add after a linear fuses into it (FuseOps).
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.gpu.tensor_core import (
    TensorCoreSpec,
    matrix_units,
    supports,
    tensor_core_matmul_te,
)
from mlcx.kernels.step_params import DECODE, PREFILL, TOKENS
from mlcx.passes.linear_match import LinearRewriter, rewrite_block, swiglu_input


def _token_count(func: relax.Function):
    tokens = next(p for p in func.params if p.name == TOKENS)
    return tokens.ty.shape[0]


class _Planner:
    def __init__(self, rewriter: LinearRewriter, tokens, accumulate: str, decode: bool):
        self.rewriter, self.tokens = rewriter, tokens
        self.accumulate, self.decode = accumulate, decode

    def __call__(self, binding, block, _adds):
        found = self.rewriter.linear(binding)
        if found is None or str(found.x.ty.dtype) != "float16":
            return None
        if not found.x.ty.shape[0].same_as(self.tokens):  # the head of prefill: logit rows
            return None
        k, n = found.features
        if not supports(found.fmt, k, n):
            return None
        gate_up = swiglu_input(block.sole(found.x), block)
        spec = TensorCoreSpec(found.fmt, k, n, self.accumulate, self.decode, gate_up is not None)
        x = found.x if gate_up is None else gate_up
        return self.rewriter.call(spec, [x, *found.weights], found, None)


def _rewrite(mod: tvm.IRModule, function: str, accumulate: str, decode: bool) -> tvm.IRModule:
    gvar = next((g for g in mod.get_global_vars() if g.name_hint == function), None)
    if gvar is None:
        return mod
    rewriter = LinearRewriter(mod, tensor_core_matmul_te)
    func = mod[gvar]
    planner = _Planner(rewriter, _token_count(func), accumulate, decode)
    body = func.body
    blocks = [
        rewrite_block(b, planner) if isinstance(b, relax.DataflowBlock) else b for b in body.blocks
    ]
    seq = relax.SeqExpr(blocks, body.body)
    new = relax.Function(func.params, seq, func.ret_ty, func.is_pure, func.attrs)
    rewriter.builder.update_func(gvar, new)
    return relax.transform.DeadCodeElimination()(rewriter.builder.get())


def _arch(target: tvm.target.Target) -> str:
    return str(target.attrs.get("arch", "")) if target.kind.name == "cuda" else ""


def tensor_core_prefill(
    target: tvm.target.Target, dtype: str, allowed: bool = True
) -> tvm.transform.Pass:
    kind = target.kind.name
    enabled = allowed and matrix_units(kind, _arch(target), dtype)
    accumulate = "float16" if kind == "metal" else "float32"

    @tvm.transform.module_pass(opt_level=0, name="mlcx.TensorCorePrefill")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        return _rewrite(mod, PREFILL, accumulate, False) if enabled else mod

    return _pass


def decode_gemv(target: tvm.target.Target, dtype: str, enabled: bool) -> tvm.transform.Pass:
    on = enabled and target.kind.name == "cuda" and dtype == "float16"

    @tvm.transform.module_pass(opt_level=0, name="mlcx.DecodeGEMV")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        return _rewrite(mod, DECODE, "float32", True) if on else mod

    return _pass
