"""Mixture-of-experts compute over stacked expert weights, as tensor expressions every target
lowers (cpu, and the same TIR for every GPU target).

Stacked layout: an expert weight of E experts, each [rows, in], is one matrix [E * rows, in]
in any `WeightFormat` (expert-major, GGUF's `*_exps` [E, rows, in] read row by row); expert
e's row r is row e * rows + r. A fused gate/up weight stacks every expert's gate rows, then
every expert's up rows: [2 * E * I, in].

Expert compute is defined as a gathered GEMV: each (token, chosen slot) pair dots its input
with the rows of the expert the router chose for it. A decode step reads only the chosen
experts' rows (the bandwidth bound); as written, prefill re-reads an expert per routed row.
Targets swap it for kernels that sort the routed rows by expert and read each expert once per
tile of its rows (mlcx.passes.cpu.fuse_experts, mlcx.passes.gpu.fuse_experts) wherever they read
the weight format; elsewhere this definition runs under its own schedules.

Biases (gpt-oss) are a value per stacked row, added after the dot product; a graph passes an
expert GEMV's operands as (input, ids, weight planes..., bias), the order the target rewrites
read. The gated activation between gate/up and down is its own annotated TE function
(expert_glu_te), which those rewrites fuse into the down projection's kernel.

Top-k without sorting: an expert's rank is how many experts beat it (a higher probability, or
the same one at a lower index), a sum every target schedules as a plain reduction; slot j's
expert is the one of rank j.
"""

from __future__ import annotations

from tvm import te, tirx

from mlcx.kernels.linear import ACCUMULATE
from mlcx.kernels.moe_options import GluActivation
from mlcx.quantization.formats import WeightFormat


def check_expert_flags(spec) -> None:
    """The flags an expert kernel spec (CPU or GPU) shares: a SwiGLU input is a down
    projection's (per slot), and only it has an activation other than SwiGLU's; a fused gate/up
    output has two equal halves."""
    if spec.swiglu and not spec.per_slot:
        raise ValueError("a SwiGLU input belongs to a per-slot (down) expert linear")
    if not spec.swiglu and not spec.glu.plain:
        raise ValueError("a gated activation needs a SwiGLU input (swiglu=True)")
    if spec.fused and spec.out_features % 2:
        raise ValueError(f"a fused gate/up output is even, not {spec.out_features}")


# Block annotation of the gathered expert GEMVs, naming their weight format
# (mlcx.passes.gpu.experts_rule schedules them; mlcx.passes.cpu.fuse_experts swaps them).
EXPERTS_ATTR = "mlcx.experts"
# Block annotation of the router's top-k chain (mlcx.passes.gpu.topk_rule schedules it).
TOPK_ATTR = "mlcx.router_topk"
# Block annotation of the gated activation between gate/up and down (GluActivation.annotation),
# which the expert rewrites fuse into the down projection's kernel (mlcx.passes.experts_match).
GLU_ATTR = "mlcx.expert_glu"
_TOPK = {TOPK_ATTR: 1}


def _rank(probs: te.Tensor) -> te.Tensor:
    tokens, experts = probs.shape
    other = te.reduce_axis((0, experts), name="other")

    def beats(t, e):
        p, q = probs[t, other], probs[t, e]
        better = tirx.any(p > q, tirx.all(p == q, other < e))
        one, zero = tirx.const(1, "int32"), tirx.const(0, "int32")
        return te.sum(tirx.Select(better, one, zero), axis=other)

    return te.compute((tokens, experts), beats, name="expert_rank", attrs=_TOPK)


def topk_ids_te(probs: te.Tensor, k: int) -> te.Tensor:
    """ids [tokens, k] int32: the experts of the k highest probabilities, best first."""
    rank = _rank(probs)
    e = te.reduce_axis((0, probs.shape[1]), name="e")
    ids = te.compute(
        (probs.shape[0], k),
        lambda t, j: te.sum(tirx.Select(rank[t, e] == j, e.var.astype("int32"), 0), axis=e),
        name="topk_sum_ids",
        attrs=_TOPK,
    )
    # NaN probabilities (a padded row's garbage) beat nothing: every expert ranks 0 and the
    # sum is no expert; clamped, so the expert GEMVs never read past the stacked weights
    last = tirx.const(int(probs.shape[1]) - 1, "int32")
    return te.compute(ids.shape, lambda t, j: te.min(ids[t, j], last), name="topk_ids", attrs=_TOPK)


def topk_weights_te(probs: te.Tensor, k: int, renormalize: bool) -> te.Tensor:
    """weights [tokens, k] f32: the k highest probabilities, best first; divided by their
    sum where `renormalize`."""
    rank = _rank(probs)
    e = te.reduce_axis((0, probs.shape[1]), name="e")
    top = te.compute(
        (probs.shape[0], k),
        lambda t, j: te.sum(
            tirx.Select(rank[t, e] == j, probs[t, e], tirx.const(0.0, probs.dtype)), axis=e
        ),
        name="topk_probs",
        attrs=_TOPK,
    )
    if not renormalize:
        return top
    s = te.reduce_axis((0, k), name="s")
    total = te.compute(
        (probs.shape[0],), lambda t: te.sum(top[t, s], axis=s), name="topk_sum", attrs=_TOPK
    )
    return te.compute(
        top.shape, lambda t, j: top[t, j] / total[t], name="topk_weights", attrs=_TOPK
    )


def expert_scaled_te(weights: te.Tensor, ids: te.Tensor, scale: te.Tensor) -> te.Tensor:
    """weights [tokens, k] times each chosen expert's own scale (Gemma 4's per_expert_scale)."""
    return te.compute(
        weights.shape,
        lambda t, j: weights[t, j] * scale[ids[t, j]].astype(weights.dtype),
        name="expert_scaled",
    )


def topk_softmax_te(logits: te.Tensor, k: int) -> te.Tensor:
    """weights [tokens, k] f32: a softmax over the k highest logits, best first (gpt-oss's
    router: top-k, then softmax; the ids are topk_ids_te's of the same logits)."""
    top = topk_weights_te(logits, k, renormalize=False)
    shifted = te.compute(
        top.shape, lambda t, j: te.exp(top[t, j] - top[t, 0]), name="topk_exp", attrs=_TOPK
    )
    s = te.reduce_axis((0, k), name="s")
    total = te.compute(
        (top.shape[0],), lambda t: te.sum(shifted[t, s], axis=s), name="topk_sum", attrs=_TOPK
    )
    return te.compute(
        top.shape, lambda t, j: shifted[t, j] / total[t], name="topk_weights", attrs=_TOPK
    )


def _gathered(x_at, in_features, ids, weights, fmt, shape, row, dtype, name, bias=None):
    """out[t, j, c] = sum_i x_at(t, j, i) * W[row(ids[t, j], c), i] (+ bias[that row]), W read
    through fmt."""
    i = te.reduce_axis((0, in_features), name="i")

    def dot(t, j, c):
        w = fmt.element(weights, row(ids[t, j], c), i, ACCUMULATE)
        return te.sum(x_at(t, j, i).astype(ACCUMULATE) * w, axis=i)

    acc = te.compute(shape, dot, name=name, attrs={EXPERTS_ATTR: fmt.name})
    if bias is not None:
        summed = acc
        acc = te.compute(
            shape,
            lambda t, j, c: summed[t, j, c] + bias[row(ids[t, j], c)].astype(ACCUMULATE),
            name=name + "_bias",
        )
    if dtype == ACCUMULATE:
        return acc
    return te.compute(shape, lambda t, j, c: acc[t, j, c].astype(dtype), name=name + "_cast")


def experts_gate_up_te(
    x: te.Tensor,
    ids: te.Tensor,
    weights: dict,
    fmt: WeightFormat,
    experts: int,
    width: int,
    bias: te.Tensor | None = None,
) -> te.Tensor:
    """[tokens, k, 2 * width]: the chosen experts' gate (first half) and up (second half)
    projections of x [tokens, in]; `bias` [2 * experts * width] a value per stacked row."""
    tokens, in_features = x.shape
    k = ids.shape[1]
    half = experts * width

    def row(expert, c):
        gate = expert * width + c
        return tirx.Select(c < width, gate, half + gate - width)

    return _gathered(
        lambda t, j, i: x[t, i], in_features, ids, weights, fmt,
        (tokens, k, 2 * width), row, x.dtype, "experts_gate_up", bias,
    )  # fmt: skip


def experts_down_te(
    h: te.Tensor,
    ids: te.Tensor,
    weights: dict,
    fmt: WeightFormat,
    out_features: int,
    bias: te.Tensor | None = None,
) -> te.Tensor:
    """[tokens, k, out]: each slot's down projection of h [tokens, k, width] by its expert;
    `bias` [experts * out] a value per stacked row."""
    tokens, k, width = h.shape
    return _gathered(
        lambda t, j, i: h[t, j, i], width, ids, weights, fmt,
        (tokens, k, out_features), lambda e, c: e * out_features + c, h.dtype, "experts_down",
        bias,
    )  # fmt: skip


def expert_glu_te(gate_up: te.Tensor, glu: GluActivation) -> te.Tensor:
    """[tokens, k, width]: glu(gate, up) of each slot's gate/up [tokens, k, 2 * width] (gate
    first); f32 math. Annotated, so the down projection's kernel can take it in."""
    tokens, k, both = gate_up.shape
    width = both // 2

    def act(t, j, c):
        gate = gate_up[t, j, c].astype(ACCUMULATE)
        up = gate_up[t, j, c + width].astype(ACCUMULATE)
        value = glu.apply(gate, up, te.exp, lambda v: tirx.const(v, ACCUMULATE))
        return value.astype(gate_up.dtype)

    attrs = {GLU_ATTR: glu.annotation()}
    return te.compute((tokens, k, width), act, name="expert_glu", attrs=attrs)
