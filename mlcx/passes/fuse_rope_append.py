"""Relax pass: reshape -> split -> rope(q), rope(k) -> kv_append becomes one kernel.

The attention block of mlcx.frontends.nn emits, per layer,

    parts = split(reshape(qkv, (t, h_q + 2 h_kv, d)), [h_q, h_q + h_kv], axis=1)
    q = call_tir(rope, (parts[0], positions));  k = call_tir(rope, (parts[1], positions))
    pages = call_tir_inplace(kv_append, (pages, k, parts[2], slots))

with both rope PrimFuncs annotated by mlcx.kernels.rope and the append kernel naming itself
(KERNEL_ATTR: kv_append_cpu or kv_append_gpu); a model with q/k norms (Qwen3) reads
`rms_norm(parts[i], weight)` over the last axis into each rope instead of parts[i]. This pass
replaces the group by one call_tir_inplace of the matching fused kernel (FUSED:
mlcx.kernels.cpu.rope_append or mlcx.kernels.gpu.rope_append; q as a new output, pages in
place, the q and k norm weights as two more inputs), bound where q was; the kv_append binding
then reads the fused call's second output.
"""

from __future__ import annotations

import json

import tvm
from tvm import relax, s_tir

from mlcx.kernels.cpu.kv_pages import KERNEL_ATTR, PageGeometry
from mlcx.kernels.cpu.rope_append import norm_fusable, rope_append_cpu
from mlcx.kernels.gpu.kv_append import KV_DTYPE_ATTR
from mlcx.kernels.gpu.rope_append import rope_append_gpu
from mlcx.kernels.rope import ROPE_ATTR, RopeParams
from mlcx.passes.linear_match import rewrite_dataflow


def _gpu(h_q: int, geo: PageGeometry, rope: RopeParams, norm_eps: float | None):
    heads = (h_q, geo.h_kv, geo.head_dim, geo.page_size)
    return rope_append_gpu(*heads, geo.io_dtype, rope, norm_eps, geo.dtype)


def _cpu(h_q: int, geo: PageGeometry, rope: RopeParams, norm_eps: float | None):
    if geo.head_dim % 8 or (norm_eps is not None and not norm_fusable(geo.head_dim)):
        return None
    return rope_append_cpu(h_q, geo, rope, norm_eps)


# append kernel (its KERNEL_ATTR) -> (fused kernel name, builder; None when it cannot fuse)
FUSED = {"kv_append_cpu": ("rope_append_cpu", _cpu), "kv_append_gpu": ("rope_append_gpu", _gpu)}


def _rope_params(func) -> RopeParams | None:
    if not isinstance(func, tvm.tirx.PrimFunc):
        return None
    try:
        sch = s_tir.Schedule(func)
        blocks = [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # hand-written TIR: not a rope
        return None
    found = [
        json.loads(str(b.annotations[ROPE_ATTR])) for b in blocks if ROPE_ATTR in b.annotations
    ]
    if not found:
        return None
    p = found[0]
    return RopeParams(float(p["theta"]), dict(p["scaling"]), int(p["rotary_dim"]))


def _is(expr, name: str) -> bool:
    return isinstance(expr, relax.Call) and getattr(expr.op, "name", None) == name


def _head_part(values: dict, var):
    """What a rope reads: (split item, (norm weight, epsilon) or None) for `split[i]` or
    `rms_norm(split[i], weight)` over the last axis."""
    value = values.get(var)
    if not _is(value, "relax.nn.rms_norm"):
        return value, None
    if [int(a) for a in value.attrs.axes] not in ([-1], [2]):
        return None, None
    return values.get(value.args[0]), (value.args[1], float(value.attrs.epsilon))


def _same_eps(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and a[1] == b[1])


class _Group:
    """One matched layer: the bindings to replace and what the fused call needs."""

    def __init__(self, q_var, append_var, args, h_q, rope, geo, kind, norm_eps):
        self.q_var, self.append_var = q_var, append_var
        self.args = args  # qkv, positions, pages, slots[, q norm weight, k norm weight]
        self.h_q, self.rope, self.geo, self.kind = h_q, rope, geo, kind
        self.norm_eps = norm_eps


def _match_append(binding, values: dict, mod: tvm.IRModule) -> _Group | None:
    value = binding.value
    if not _is(value, "relax.call_tir_inplace"):
        return None
    func = mod[value.args[0]]
    kind = str(func.attrs.get(KERNEL_ATTR, "")) if func.attrs else ""
    if kind not in FUSED:
        return None
    pages, k_rot, v_part, slots = value.args[1].fields
    k_call = values.get(k_rot)
    if not _is(k_call, "relax.call_tir"):
        return None
    rope = _rope_params(mod[k_call.args[0]])
    k_part, positions = k_call.args[1].fields
    (k_item, k_norm), v_item = _head_part(values, k_part), values.get(v_part)
    if rope is None or not all(isinstance(i, relax.TupleGetItem) for i in (k_item, v_item)):
        return None
    if not k_item.tuple_value.same_as(v_item.tuple_value) or (k_item.index, v_item.index) != (1, 2):
        return None
    split = values.get(k_item.tuple_value)
    reshape = values.get(split.args[0]) if _is(split, "relax.split") else None
    if not _is(reshape, "relax.reshape") or int(split.attrs.axis) not in (1, -2):
        return None
    found = _q_binding(values, mod, k_item.tuple_value, positions, rope)
    if found is None or not _same_eps(found[1], k_norm):
        return None
    q_var, q_norm = found
    q_ty = q_var.ty
    h_q, d = int(q_ty.shape[1]), int(q_ty.shape[2])
    pages_ty = pages.ty
    ps = int(pages_ty.shape[3])
    # the cache dtype: a GPU append kernel names it (its pages may be words), a CPU one's pages
    cache_dtype = str(func.attrs.get(KV_DTYPE_ATTR, pages_ty.dtype))
    geo = PageGeometry(int(pages_ty.shape[2]), d, ps, cache_dtype, str(q_ty.dtype))
    args = [reshape.args[0], positions, pages, slots]
    if q_norm is None or k_norm is None:
        return _Group(q_var, binding.var, args, h_q, rope, geo, kind, None)
    args += [q_norm[0], k_norm[0]]
    return _Group(q_var, binding.var, args, h_q, rope, geo, kind, k_norm[1])


def _q_binding(values: dict, mod, split_var, positions, rope: RopeParams):
    """(the var bound to rope([rms_norm](split[0]), positions) with the same RoPE parameters,
    its norm as _head_part gives it)."""
    for var, value in values.items():
        if not _is(value, "relax.call_tir") or len(value.args[1].fields) != 2:
            continue
        part, pos = value.args[1].fields
        item, norm = _head_part(values, part)
        if (
            isinstance(item, relax.TupleGetItem)
            and item.tuple_value.same_as(split_var)
            and item.index == 0
            and pos.same_as(positions)
            and _rope_params(mod[value.args[0]]) == rope
        ):
            return var, norm
    return None


class _Kernels:
    """One fused PrimFunc per (kind, heads, page geometry, RoPE parameters)."""

    def __init__(self, builder: relax.BlockBuilder):
        self.builder = builder
        self.cache: dict = {}

    def get(self, g: _Group) -> relax.GlobalVar | None:
        key = (g.kind, g.h_q, g.geo, g.rope, g.norm_eps)
        if key not in self.cache:
            name, build = FUSED[g.kind]
            func = build(g.h_q, g.geo, g.rope, g.norm_eps)
            if func is not None:
                func = func.with_attr(KERNEL_ATTR, name).without_attr("global_symbol")
            self.cache[key] = func and self.builder.add_func(func, name)
        return self.cache[key]


def _rewrite_block(block: relax.DataflowBlock, mod: tvm.IRModule, kernels) -> relax.DataflowBlock:
    values = {b.var: b.value for b in block.bindings}
    found = (_match_append(b, values, mod) for b in block.bindings)
    groups = [g for g in found if g is not None and kernels.get(g) is not None]
    by_q = {g.q_var: g for g in groups}
    by_append = {g.append_var: g for g in groups}
    fused = {}
    bindings = []
    for b in block.bindings:
        if b.var in by_q:
            g = by_q[b.var]
            out_ty = [b.var.ty, g.append_var.ty]
            call = relax.call_tir_inplace(kernels.get(g), relax.Tuple(g.args), [-1, 2], out_ty)
            fused[g] = relax.DataflowVar("rope_append", relax.TupleType(out_ty))
            bindings.append(relax.VarBinding(fused[g], call))
            bindings.append(relax.VarBinding(b.var, relax.TupleGetItem(fused[g], 0)))
        elif b.var in by_append:
            g = by_append[b.var]
            bindings.append(relax.VarBinding(b.var, relax.TupleGetItem(fused[g], 1)))
        else:
            bindings.append(b)
    return relax.DataflowBlock(bindings)


def fuse_rope_append() -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name="mlcx.FuseRopeAppend")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        builder = relax.BlockBuilder(mod)
        kernels = _Kernels(builder)
        return rewrite_dataflow(mod, builder, lambda block: _rewrite_block(block, mod, kernels))

    return _pass
