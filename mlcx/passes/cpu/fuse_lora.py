"""Relax pass: a LoRA shrink whose input is an RMSNorm's or a SwiGLU's output reads that op's
own inputs instead, through a kernel that computes the op itself (mlcx.kernels.cpu.lora_shrink).
The op's output is then read by the base linear alone, which fuses it as its prologue
(mlcx.passes.cpu.fuse_linear runs next). Left as they were, the adapters' read kept each norm
and SwiGLU a kernel of its own: on SmolLM2 with adapters on q/k/v and the MLP, 60 RMSNorms and
30 SwiGLUs (scalar exp) a decode step, and the linears without their fused prologues.

Likewise a residual add of an expand's output, add(expand(y, ...), r) with y a linear's output,
becomes add(y, expand(r, ...)): the adapter's delta is added to the residual, and the linear
fuses the add as its epilogue (the same sum, in another order).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.lora_shrink import ShrinkSpec, build_lora_shrink
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.kernels.lora import ROLE_ATTR
from mlcx.passes.cpu.fuse_linear import rmsnorm_rows, swiglu_rows
from mlcx.passes.linear_match import Block, LinearRewriter, is_op, linear_format


def _role(mod: tvm.IRModule, value) -> str | None:
    """The role of a call of a LoRA kernel (mlcx.kernels.lora: shrink or expand), else None."""
    if not is_op(value, "relax.call_tir"):
        return None
    func = mod[value.args[0]]
    return str(func.attrs[ROLE_ATTR]) if func.attrs and ROLE_ATTR in func.attrs else None


def _bound_before(var, other, block: Block) -> bool:
    """Whether var is bound before `other` in the block (or outside it)."""
    order = list(block.values)
    return var not in block.values or order.index(var) < order.index(other)


def _source(x, block: Block, features: int):
    """(row source, its Relax inputs) when x is bound to an RMSNorm or a SwiGLU, else None."""
    value = block.values.get(x) if isinstance(x, relax.DataflowVar) else None
    if is_op(value, "relax.nn.rms_norm"):
        return rmsnorm_rows(value, features)
    if is_op(value, "relax.multiply"):
        return swiglu_rows(value, block, features)
    return None


class _Fuser(LinearRewriter):
    def __init__(self, mod: tvm.IRModule, cfg: KernelConfig):
        super().__init__(mod, build_lora_shrink)
        self.threads = cfg.threads

    def plan(self, binding, info: Block, adds: dict):
        if binding.var in adds:
            return self._residual(binding, info)
        if _role(self.mod, binding.value) != "shrink":
            return None
        x, a, rows = binding.value.args[1].fields
        features = int(x.ty.shape[1])
        if x.ty.dtype != "float32" or features % CHUNK:
            return None
        found = _source(x, info, features)
        if found is None:
            return None
        source, inputs = found
        slots, width, _ = (int(d) for d in a.ty.shape)
        spec = ShrinkSpec(source, width, slots, a.ty.dtype, self.threads)
        args = relax.Tuple([*inputs, a, rows])
        return binding.var, relax.call_tir(self.kernel(spec), args, binding.var.ty)

    def _is_linear(self, var, info: Block) -> bool:
        value = info.sole(var)
        return is_op(value, "relax.call_tir") and linear_format(self.mod[value.args[0]]) is not None

    def _residual(self, binding, info: Block):
        """[(expand var, the expand of the residual), (add var, linear output + it)], or None."""
        first, second = binding.value.args
        for var, residual in ((first, second), (second, first)):
            expand = info.sole(var)
            if _role(self.mod, expand) != "expand":
                continue
            y, *rest = expand.args[1].fields
            if (
                self._is_linear(y, info)
                and _bound_before(residual, var, info)
                and tvm_ffi.structural_equal(residual.ty, y.ty)
            ):
                moved = relax.call_tir(expand.args[0], relax.Tuple([residual, *rest]), var.ty)
                return [(var, moved), (binding.var, relax.op.add(y, var))]
        return None


def fuse_lora(cfg: KernelConfig) -> tvm.transform.Pass:
    return _Fuser.module_pass("mlcx.FuseLoraCPU", cfg)
