"""Relax pass: the linear layers of `prefill` run on matrix units (mlcx.kernels.gpu.tensor_core)
where the target has them (cuda sm >= 70, metal; float16 activations).

Only prefill's linears over all its new tokens: decode keeps mlcx's GEMV (a handful of rows;
tensor cores would pad them to a tile), and the head of prefill reads only the logit rows.
Runs before `fuse_linear_gpu`, which then turns the remaining linears into mlcx's kernels; the
residual add after a GEMM fuses into it (FuseOps) and the SwiGLU before the down projection
stays an elementwise kernel (prefill is compute-bound: one more pass over the activations).
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
from mlcx.kernels.step_params import PREFILL, TOKENS
from mlcx.passes.linear_match import LinearRewriter, rewrite_block


def _token_count(func: relax.Function):
    tokens = next(p for p in func.params if p.name == TOKENS)
    return tokens.ty.shape[0]


class _Planner:
    def __init__(self, rewriter: LinearRewriter, tokens, accumulate: str):
        self.rewriter, self.tokens, self.accumulate = rewriter, tokens, accumulate

    def __call__(self, binding, _block, _adds):
        found = self.rewriter.linear(binding)
        if found is None or str(found.x.ty.dtype) != "float16":
            return None
        if not found.x.ty.shape[0].same_as(self.tokens):  # the head: logit rows only
            return None
        k, n = found.features
        if not supports(found.fmt, k, n):
            return None
        spec = TensorCoreSpec(found.fmt, k, n, self.accumulate)
        return self.rewriter.call(spec, [found.x, *found.weights], found, None)


def tensor_core_prefill(target: tvm.target.Target, dtype: str) -> tvm.transform.Pass:
    kind = target.kind.name
    arch = str(target.attrs.get("arch", "")) if kind == "cuda" else ""
    enabled = matrix_units(kind, arch, dtype)
    accumulate = "float16" if kind == "metal" else "float32"

    @tvm.transform.module_pass(opt_level=0, name="mlcx.TensorCorePrefill")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        gvar = next((g for g in mod.get_global_vars() if g.name_hint == PREFILL), None)
        if not enabled or gvar is None:
            return mod
        rewriter = LinearRewriter(mod, tensor_core_matmul_te)
        func = mod[gvar]
        planner = _Planner(rewriter, _token_count(func), accumulate)
        body = func.body
        blocks = [
            rewrite_block(b, planner) if isinstance(b, relax.DataflowBlock) else b
            for b in body.blocks
        ]
        seq = relax.SeqExpr(blocks, body.body)
        new = relax.Function(func.params, seq, func.ret_ty, func.is_pure, func.attrs)
        rewriter.builder.update_func(gvar, new)
        return relax.transform.DeadCodeElimination()(rewriter.builder.get())

    return _pass
