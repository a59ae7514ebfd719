"""What every embedding model's graph shares: attention over a padded batch without a KV
cache, pooling by host-given weights, and the one exported function.

embed(input_ids [batch, seq], positions [batch, seq], mask [batch, seq], pool [batch, seq])
  -> [batch, hidden] float32
`mask` is 1.0 for a text's tokens and 0.0 for padding; `pool` holds each token's share of the
text's vector (mean: 1/len over its tokens; CLS: 1 at the first; last: 1 at its last), so one
graph serves every pooling mode and the runtime decides it.
"""

from __future__ import annotations

from tvm import te, tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

EMBED = "embed"
EMBED_INPUTS = ("input_ids", "positions", "mask", "pool")
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


def dense_attention(q: nn.Tensor, k: nn.Tensor, v: nn.Tensor, bias: nn.Tensor) -> nn.Tensor:
    """softmax(q k^T / sqrt(d) + bias) v over a padded batch.

    q [b, s, hq, d], k and v [b, s, hkv, d] (each kv head serves hq / hkv adjacent q heads)
    -> [b, s, hq, d]."""
    heads, kv_heads, head_dim = q.shape[2], k.shape[2], q.shape[3]
    if heads != kv_heads:
        k = op.repeat(k, heads // kv_heads, axis=2)
        v = op.repeat(v, heads // kv_heads, axis=2)
    q = op.permute_dims(q, [0, 2, 1, 3])
    scores = op.matmul(q, op.permute_dims(k, [0, 2, 3, 1])) * (1.0 / float(head_dim) ** 0.5)
    probs = op.softmax(scores + bias, axis=-1)
    out = op.matmul(probs, op.permute_dims(v, [0, 2, 1, 3]))
    return op.permute_dims(out, [0, 2, 1, 3])


def pooled(hidden: nn.Tensor, pool: nn.Tensor) -> nn.Tensor:
    """[batch, hidden_size] float32: each text's tokens weighted by `pool` [b, s]; `hidden`
    holds the b * s tokens' states, row-major."""
    batch, seq = pool.shape
    states = op.reshape(hidden, (batch, seq, hidden.shape[-1]))
    if states.dtype != "float32":
        states = states.astype("float32")
    out = op.matmul(op.reshape(pool, (batch, 1, seq)), states)
    return op.reshape(out, (batch, hidden.shape[-1]))


def embed_spec() -> dict:
    dtypes = {"input_ids": "int32", "positions": "int32", "mask": "float32", "pool": "float32"}
    inputs = {name: spec.Tensor(["batch", "seq"], dtypes[name]) for name in EMBED_INPUTS}
    return {EMBED: {**inputs, "$": {"param_mode": "packed", "effect_mode": "none"}}}
