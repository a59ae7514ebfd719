"""Relax pass: the mixture-of-experts GEMVs (mlcx.kernels.moe) become mlcx's GPU expert kernels
(mlcx.kernels.gpu.experts): the routed rows are sorted by expert once per layer (the gate/up
and down projections share the router's ids, so they share the sort), and each projection
takes the gathered GEMV for a few routed rows or the grouped GEMM over the sorted rows for
more. The down projection absorbs the silu(gate) * up that feeds it.

A call is swapped when the GPU linear kernels read its weight format (a stack of two formats,
as a GGUF's Q4_0 gate with a Q8_0 up, is not) and its output has the input's dtype; anything
else keeps the TE GEMV and its schedule (mlcx.passes.gpu.experts_rule).
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.expert_sort import ExpertSortSpec, build_expert_sort, sort_shapes
from mlcx.kernels.gpu.experts import GpuExpertsSpec, build_gpu_experts
from mlcx.kernels.gpu.weight_reader import GpuWeightReader, supports
from mlcx.passes.experts_match import ExpertsCall, experts_call
from mlcx.passes.linear_match import Block, rewrite_dataflow


class _Kernels:
    def __init__(self, builder: relax.BlockBuilder, cfg: GpuConfig):
        self.builder, self.cfg = builder, cfg
        self.cache: dict = {}

    def get(self, spec) -> relax.GlobalVar:
        if spec not in self.cache:
            if isinstance(spec, ExpertSortSpec):
                func = build_expert_sort(spec)
            else:
                func = build_gpu_experts(spec, self.cfg)
            self.cache[spec] = self.builder.add_func(func, spec.name)
        return self.cache[spec]


def _spec(found: ExpertsCall) -> GpuExpertsSpec | None:
    dtype = str(found.x.ty.dtype)
    if str(found.var.ty.dtype) != dtype or not supports(found.fmt, found.in_features):
        return None
    return GpuExpertsSpec(
        found.fmt, found.experts, found.slots, found.in_features, found.out_features, dtype,
        per_slot=found.kind == "down", fused=found.kind == "gate_up",
        swiglu=found.swiglu is not None, bias=found.bias is not None, glu=found.glu,
    )  # fmt: skip


def _kernel_reads(spec: GpuExpertsSpec, weights: list) -> list[relax.Expr]:
    """The weight planes as the kernel declares them: 8-bit codes as uint32 words (a view)."""
    specs = GpuWeightReader(spec.fmt, spec.in_features).param_specs(spec.weight_rows)
    out = []
    for weight, suffix in zip(weights, spec.fmt.suffixes, strict=True):
        shape, dtype = specs[suffix]
        same = str(weight.ty.dtype) == dtype
        out.append(weight if same else relax.op.memory.view(weight, list(shape), dtype))
    return out


class _Sorts:
    """The sort of each ids value in one block, emitted before its first user."""

    def __init__(self, kernels: _Kernels):
        self.kernels = kernels
        self.done: dict = {}

    def of(self, ids: relax.Expr, spec: ExpertSortSpec, bindings: list) -> tuple:
        key = (ids, spec)
        if key not in self.done:
            tokens = ids.ty.shape[0]
            types = [relax.TensorType(list(s), "int32") for s in sort_shapes(tokens, spec)]
            call = relax.call_tir(self.kernels.get(spec), relax.Tuple([ids, ids]), types)
            tuple_var = relax.DataflowVar("expert_sort", relax.TupleType(types))
            bindings.append(relax.VarBinding(tuple_var, call))
            outs = []
            for i, name in enumerate(("expert_order", "expert_tiles")):
                var = relax.DataflowVar(name, types[i])
                bindings.append(relax.VarBinding(var, relax.TupleGetItem(tuple_var, i)))
                outs.append(var)
            self.done[key] = tuple(outs)
        return self.done[key]


def _rewrite_block(block, mod: tvm.IRModule, kernels: _Kernels) -> relax.DataflowBlock:
    info, sorts, bindings = Block.of(block), _Sorts(kernels), []
    for binding in block.bindings:
        found = experts_call(mod, binding, info)
        spec = _spec(found) if found is not None else None
        if spec is None:
            bindings.append(binding)
            continue
        order, tiles = sorts.of(found.ids, spec.sort_spec(kernels.cfg), bindings)
        x = found.swiglu if found.swiglu is not None else found.x
        bias = [found.bias] if found.bias is not None else []
        args = [x, found.ids, order, tiles, *_kernel_reads(spec, found.weights), *bias]
        call = relax.call_tir(kernels.get(spec), relax.Tuple(args), found.var.ty)
        bindings.append(relax.VarBinding(found.var, call))
    return relax.DataflowBlock(bindings)


def fuse_experts_gpu(cfg: GpuConfig) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name="mlcx.FuseExpertsGPU")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        builder = relax.BlockBuilder(mod)
        kernels = _Kernels(builder, cfg)
        return rewrite_dataflow(mod, builder, lambda block: _rewrite_block(block, mod, kernels))

    return _pass
