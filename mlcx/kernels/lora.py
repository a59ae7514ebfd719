"""The batched LoRA kernels: every token row runs with its own adapter (a slot of the stacked
weights, mlcx.kernels.lora_layout), so requests with different adapters share one batch while
the base weights stay as they are (quantized, untouched).

For a projection y = x @ W.T with fused parts (q/k/v, gate/up):
- shrink: u[t, p*R + j] = sum_k x[t, k] * A[slot[t], p*R + j, k]   (each part's rank-R input)
- expand: y'[t, n] = y[t, n] + scale[t] * sum_j B[slot[t], j, n] * u[t, part(n)*R + j]
which is x @ A_p.T @ B_p.T * scale for the part p that output feature n belongs to (vLLM's
shrink/expand; S-LoRA's and Punica's batched gather). Slot 0 is zeros: a token without an
adapter adds nothing. On CPU both kernels are vectorized along their contiguous axis (the
rows of A, the output features of B) and shared out among the threads; a shrink whose input is
an RMSNorm's or a SwiGLU's output is swapped for one computing that op itself
(mlcx.passes.cpu.fuse_lora). On GPU targets a block's threads share each shrink dot
product (a cross-thread reduction) and expand runs a thread per output feature.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tvm import s_tir, te, tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.kernels.lora_layout import LoraTarget

ACCUMULATE = "float32"
OPAQUE = 8  # tvm.relax's OpPatternKind.kOpaque
ROLE_ATTR = "mlcx.lora"  # "shrink" or "expand": what a pass looks the kernels up by
LANES = 16  # CPU vector width in float32 lanes (AVX-512; LLVM splits it for narrower ISAs)


def _part_of(n: tirx.PrimExpr, parts: tuple[int, ...]) -> tirx.PrimExpr:
    """The fused part that output feature n belongs to, as nested selects."""
    index = tirx.const(len(parts) - 1, "int32")
    end = sum(parts)
    for p in reversed(range(len(parts) - 1)):
        end -= parts[p + 1]
        index = tirx.Select(n < end, tirx.const(p, "int32"), index)
    return index


def shrink_te(x: te.Tensor, a: te.Tensor, rows: te.Tensor) -> te.Tensor:
    """u [tokens, parts * rank] (float32) = x @ A[slot].T per token."""
    tokens, features = x.shape
    k = te.reduce_axis((0, features), name="k")

    def dot(t, j):
        w = a[rows[t], j, k].astype(ACCUMULATE)
        return te.sum(x[t, k].astype(ACCUMULATE) * w, axis=k)

    return te.compute((tokens, a.shape[1]), dot, name="lora_u")


def expand_te(
    y: te.Tensor, u: te.Tensor, b: te.Tensor, rows: te.Tensor, scales: te.Tensor, parts, rank: int
) -> te.Tensor:
    """y + scale * (u @ B[slot]) per token, each output feature reading its part's u."""
    tokens, out = y.shape
    j = te.reduce_axis((0, rank), name="j")

    def dot(t, n):
        w = b[rows[t], j, n].astype(ACCUMULATE)
        return te.sum(u[t, _part_of(n, parts) * rank + j] * w, axis=j)

    delta = te.compute((tokens, out), dot, name="lora_delta")

    def add(t, n):
        return (y[t, n].astype(ACCUMULATE) + scales[t] * delta[t, n]).astype(y.dtype)

    return te.compute((tokens, out), add, name="lora_add")


def _tokens() -> tirx.Var:
    return tirx.Var("tokens", "int64")


def _shrink_cpu(func: tirx.PrimFunc, features: int) -> tirx.PrimFunc:
    """Each dot product as LANES partial sums along the input features (one vector FMA per
    LANES features), summed at the end; the (token, rank row) pairs shared out among the
    threads."""
    if features % LANES:
        return func
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("lora_u")
    t, j, k = sch.get_loops(block)
    _, lanes = sch.split(k, [None, LANES])
    partial = sch.rfactor(lanes, 2)
    sch.compute_at(partial, j)
    sch.parallel(sch.fuse(t, j))  # while both blocks still carry their init
    lane, chunk = sch.get_loops(partial)[1:]
    sch.reorder(chunk, lane)
    sch.vectorize(lane)  # before the init is split off: a block without it cannot be
    sch.decompose_reduction(partial, chunk)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _expand_cpu(func: tirx.PrimFunc, out: int) -> tirx.PrimFunc:
    """Per token, LANES output features at a time: the rank loop inside, the add fused in;
    the (token, LANES features) chunks shared out among the threads."""
    if out % LANES:
        return func
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("lora_delta")
    t, n, j = sch.get_loops(block)
    chunk, lanes = sch.split(n, [None, LANES])
    sch.reorder(chunk, j, lanes)
    item = sch.fuse(t, chunk)
    sch.parallel(item)
    sch.vectorize(lanes)
    sch.decompose_reduction(block, j)
    add = sch.get_sblock("lora_add")
    sch.reverse_compute_at(add, item)
    sch.vectorize(sch.get_loops(add)[-1])
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


THREADS = 64  # GPU threads per block: a shrink row's dot product, or output features


def _shrink_gpu(func: tirx.PrimFunc, features: int) -> tirx.PrimFunc:
    """A block per (token, rank row): each thread sums its share of the dot product, then
    the block reduces the partial sums across its threads."""
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("lora_u")
    t, j, k = sch.get_loops(block)
    lanes = THREADS if features >= 2 * THREADS else features // 2  # each thread 2+ products
    partial = sch.rfactor(sch.split(k, [None, lanes])[1], 0)
    sch.bind(t, "blockIdx.y")
    sch.bind(j, "blockIdx.x")
    sch.bind(sch.get_loops(block)[-1], "threadIdx.x")
    sch.compute_at(partial, j)
    sch.set_scope(partial, 0, "local")
    sch.bind(sch.get_loops(partial)[2], "threadIdx.x")
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _expand_gpu(func: tirx.PrimFunc, out: int) -> tirx.PrimFunc:
    """A thread per (token, output feature), the rank loop its own, the add fused in."""
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("lora_delta")
    t, n, _ = sch.get_loops(block)
    blocks, threads = sch.split(sch.fuse(t, n), [None, THREADS])
    sch.bind(blocks, "blockIdx.x")
    sch.bind(threads, "threadIdx.x")
    sch.reverse_compute_at(sch.get_sblock("lora_add"), threads)
    sch.set_scope(block, 0, "local")  # each thread's own delta, in a register
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


@dataclass(frozen=True)
class LoraOps:
    """The LoRA kernels of one model: `kind` "cpu" or "gpu", activations in `dtype`, A and B
    stored in `weight_dtype`."""

    kind: str
    dtype: str
    weight_dtype: str
    rank: int
    slots: int  # rows of the stacked weights (the spec's slots + 1 for slot 0)

    def apply(
        self,
        target: LoraTarget,
        x: nn.Tensor,
        y: nn.Tensor,
        a: nn.Tensor,
        b: nn.Tensor,
        rows: nn.Tensor,
        scales: nn.Tensor,
    ) -> nn.Tensor:
        """y plus each token's adapter delta of the projection `target` of x."""
        shrink, expand = self._kernels(target)
        tokens = x.shape[0]
        width = len(target.parts) * self.rank
        u = op.tensor_ir_op(
            shrink, "lora_shrink", [x, a, rows], nn.Tensor.placeholder([tokens, width], "float32")
        )
        out = nn.Tensor.placeholder([tokens, target.out_features], self.dtype)
        return op.tensor_ir_op(expand, "lora_expand", [y, u, b, rows, scales], out)

    @functools.cache  # noqa: B019 (a frozen dataclass; the kernels of each target shape once)
    def _kernels(self, target: LoraTarget) -> tuple[tirx.PrimFunc, tirx.PrimFunc]:
        t = _tokens()
        parts, rank = target.parts, self.rank
        x = te.placeholder((t, target.in_features), self.dtype, "x")
        shape_a = (self.slots, len(parts) * rank, target.in_features)
        a = te.placeholder(shape_a, self.weight_dtype, "a")
        rows = te.placeholder((t,), "int32", "rows")
        u = shrink_te(x, a, rows)
        shrink = te.create_prim_func([x, a, rows, u])
        y = te.placeholder((t, target.out_features), self.dtype, "y")
        ut = te.placeholder((t, len(parts) * rank), ACCUMULATE, "u")
        b = te.placeholder((self.slots, rank, target.out_features), self.weight_dtype, "b")
        scales = te.placeholder((t,), "float32", "scales")
        out = expand_te(y, ut, b, rows, scales, parts, rank)
        expand = te.create_prim_func([y, ut, b, rows, scales, out])
        schedule = SCHEDULES[self.kind]
        shrink = schedule[0](shrink, target.in_features)
        expand = schedule[1](expand, target.out_features)
        return _opaque(shrink, "shrink"), _opaque(expand, "expand")


# kernel kind -> (shrink schedule, expand schedule)
SCHEDULES = {"cpu": (_shrink_cpu, _expand_cpu), "gpu": (_shrink_gpu, _expand_gpu)}


def _opaque(func: tirx.PrimFunc, role: str) -> tirx.PrimFunc:
    """Kept whole: operator fusion would merge the gathers with their neighbours' loops."""
    func = func.without_attr("global_symbol").with_attr("op_pattern", OPAQUE)
    return func.with_attr(ROLE_ATTR, role)
