"""Attention with sinks (gpt-oss) as transformers computes it, and KV rows that every cache
dtype holds exactly, for the kernel tests of mlcx's sink attention.

gpt-oss's `eager_attention_forward` appends each head's sink logit to every row of scaled
scores, takes the softmax and drops the sink's column: the sink only grows the denominator.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

# (keys of each sequence, new tokens of each: its last rows are the queries)
CASES = {
    "prefill": ([21], [21]),  # no cached prefix
    "chunked-ragged": ([7, 45, 5], [3, 30, 5]),  # new tokens over cached prefixes
    "decode": ([17, 1, 40], [1, 1, 1]),
    "verify": ([20, 9], [3, 4]),  # a few rows per sequence (speculative decoding's verify)
}
WINDOW = 128  # gpt-oss's sliding window
WINDOW_CASES = {
    "prefill-past-window": ([150, 60], [150, 20]),
    "decode-past-window": ([300, 129, 5], [1, 1, 1]),
}


def exact_rows(rng, n: int, h_kv: int, d: int) -> np.ndarray:
    """[n, h_kv, d] float32 rows that float16 and int8 pages hold exactly: integer codes times
    2**-7 whose largest magnitude in each row is 127, so a row's int8 scale is 2**-7 and its
    codes come back unrounded."""
    codes = rng.integers(-126, 127, (n, h_kv, d))
    top = rng.integers(0, d, (n, h_kv))
    sign = rng.choice([-1, 1], (n, h_kv))
    np.put_along_axis(codes, top[..., None], 127 * sign[..., None], axis=-1)
    return (codes * 2.0**-7).astype(np.float32)


def hf_attention(q, keys, values, sinks, new: list[int], window: int = 0) -> np.ndarray:
    """q [tokens, h_q, d] (each sequence's new rows in turn), keys/values per sequence
    [n, h_kv, d], sinks [h_q] -> output [tokens, h_q, d] (float64) by transformers' gpt-oss
    eager attention; the last new[i] keys of sequence i are its queries' own positions."""
    import torch
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward

    h_q, d = q.shape[1:]
    h_kv = keys[0].shape[1]
    module = SimpleNamespace(
        num_key_value_groups=h_q // h_kv,
        sinks=torch.tensor(np.asarray(sinks, np.float64)),
        training=False,
    )
    out, row = [], 0
    for k, v, m in zip(keys, values, new, strict=True):
        n = len(k)
        position = np.arange(n - m, n)[:, None]
        seen = np.arange(n)[None, :] <= position
        if window:
            seen &= np.arange(n)[None, :] > position - window
        mask = torch.tensor(np.where(seen, 0.0, -np.inf))[None, None]

        def heads(x):
            return torch.tensor(np.asarray(x, np.float64)).transpose(0, 1)[None]

        query = heads(q[row : row + m])
        got, _ = eager_attention_forward(module, query, heads(k), heads(v), mask, scaling=d**-0.5)
        out.append(got[0].numpy())
        row += m
    return np.concatenate(out)
