"""What every embedding model's graph shares: attention over a padded batch without a KV
cache, pooling by host-given weights, and the one exported function.

embed(input_ids, positions, rows [tokens], mask, pool [batch, seq])
  -> [batch, hidden] float32
The batch's texts are right-padded to `seq` and flattened row-major (tokens = batch * seq, the
runner's invariant; `rows` names each token's text), so every linear sees [tokens, features]
as in the decoders and no tensor is reshaped by a product of two shape variables. `mask` is
1.0 for a text's tokens and 0.0 for padding; `pool` holds each token's share of the text's
vector (mean: 1/len over its tokens; CLS: 1 at the first; last: 1 at its last), so one graph
serves every pooling mode and the runtime decides it.
"""

from __future__ import annotations

from tvm import te, tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

EMBED = "embed"
EMBED_INPUTS = ("input_ids", "positions", "rows", "mask", "pool")
MASKED = -1e9  # added to the scores of keys a query must not see (finite: no NaN rows)


def _bias_te(mask: te.Tensor, causal: bool) -> te.Tensor:
    batch, seq = mask.shape

    def bias(b, _h, i, j):
        hidden = mask[b, j] == tirx.const(0.0, "float32")
        if causal:
            hidden = tirx.Or(hidden, j > i)
        return tirx.Select(hidden, tirx.const(MASKED, "float32"), tirx.const(0.0, "float32"))

    return te.compute((batch, 1, seq, seq), bias, name="attention_bias")


def attention_bias(mask: nn.Tensor, causal: bool) -> nn.Tensor:
    """[batch, 1, seq, seq]: padding keys hidden, and later keys too where `causal`."""
    return op.tensor_expr_op(lambda m: _bias_te(m, causal), "attention_bias", [mask])


def _scores_te(q: te.Tensor, k: te.Tensor, bias: te.Tensor) -> te.Tensor:
    batch, _, seq, _ = bias.shape
    heads, group, head_dim = q.shape[1], q.shape[1] // k.shape[1], q.shape[2]
    d = te.reduce_axis((0, head_dim), name="d")
    scale = tirx.const(1.0 / int(head_dim) ** 0.5, "float32")

    def dot(b, h, i, j):
        return te.sum(q[b * seq + i, h, d] * k[b * seq + j, h // group, d] * scale, axis=d)

    dots = te.compute((batch, heads, seq, seq), dot, name="attention_dots")
    return te.compute(dots.shape, lambda b, h, i, j: dots[b, h, i, j] + bias[b, 0, i, j])


def _weighted_te(probs: te.Tensor, v: te.Tensor, rows: te.Tensor, cols: te.Tensor) -> te.Tensor:
    _, heads, seq, _ = probs.shape
    group, head_dim = heads // v.shape[1], v.shape[2]
    j = te.reduce_axis((0, seq), name="j")

    # token t sits at (rows[t], cols[t]) of the padded batch: given, not t // seq and t % seq,
    # which GPU schedule rules cannot split by a shape variable
    def out(t, h, e):
        b, i = rows[t], cols[t]
        return te.sum(probs[b, h, i, j] * v[b * seq + j, h // group, e], axis=j)

    return te.compute((v.shape[0], heads, head_dim), out, name="attention_values")


def dense_attention(q, k, v, bias, rows: nn.Tensor, cols: nn.Tensor) -> nn.Tensor:
    """softmax(q k^T / sqrt(d) + bias) v over a padded batch, its tokens flattened row-major.

    q [b * s, hq, d], k and v [b * s, hkv, d] (each kv head serves hq / hkv adjacent q heads),
    bias [b, 1, s, s], rows and cols [b * s]: each token's text and position -> [b * s, hq, d].
    Written over the flat token axis, so the linears' outputs are never reshaped to [b, s, ...]."""
    scores = op.tensor_expr_op(_scores_te, "attention_scores", [q, k, bias])
    probs = op.softmax(scores, axis=-1)
    return op.tensor_expr_op(_weighted_te, "attention_values", [probs, v, rows, cols])


def _pooled_te(hidden: te.Tensor, pool: te.Tensor) -> te.Tensor:
    batch, seq = pool.shape
    j = te.reduce_axis((0, seq), name="j")

    def weighted(b, c):
        return te.sum(pool[b, j] * hidden[b * seq + j, c].astype("float32"), axis=j)

    return te.compute((batch, hidden.shape[1]), weighted, name="pooled")


def pooled(hidden: nn.Tensor, pool: nn.Tensor) -> nn.Tensor:
    """[batch, hidden_size] float32: each text's token states [tokens, hidden] weighted by
    `pool` [batch, seq]."""
    return op.tensor_expr_op(_pooled_te, "pooled", [hidden, pool])


def embed_spec() -> dict:
    shapes = {
        "input_ids": (["tokens"], "int32"),
        "positions": (["tokens"], "int32"),
        "rows": (["tokens"], "int32"),
        "mask": (["batch", "seq"], "float32"),
        "pool": (["batch", "seq"], "float32"),
    }
    inputs = {name: spec.Tensor(*shapes[name]) for name in EMBED_INPUTS}
    return {EMBED: {**inputs, "$": {"param_mode": "packed", "effect_mode": "none"}}}
