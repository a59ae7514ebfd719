"""Relax pass: a LoRA shrink whose input is an RMSNorm's or a SwiGLU's output reads that op's
own inputs instead, through a kernel that computes the op itself (mlcx.kernels.cpu.lora_shrink).
The op's output is then read by the base linear alone, which fuses it as its prologue
(mlcx.passes.cpu.fuse_linear runs next). Left as they were, the adapters' read kept each norm
and SwiGLU a kernel of its own: on SmolLM2 with adapters on q/k/v and the MLP, 60 RMSNorms and
30 SwiGLUs (scalar exp) a decode step, and the linears without their fused prologues.
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.lora_shrink import ShrinkSpec, build_lora_shrink
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.kernels.lora import ROLE_ATTR
from mlcx.passes.cpu.fuse_linear import rmsnorm_rows, swiglu_rows
from mlcx.passes.linear_match import Block, LinearRewriter, is_op


def _is_shrink(mod: tvm.IRModule, value) -> bool:
    if not is_op(value, "relax.call_tir"):
        return False
    func = mod[value.args[0]]
    return bool(func.attrs) and str(func.attrs.get(ROLE_ATTR, "")) == "shrink"


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

    def plan(self, binding, info: Block, _adds: dict):
        if not _is_shrink(self.mod, binding.value):
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


def fuse_lora_input(cfg: KernelConfig) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name="mlcx.FuseLoraInputCPU")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        fuser = _Fuser(mod, cfg)
        return fuser.run(fuser.plan)

    return _pass
