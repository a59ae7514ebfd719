"""numpy references of the expert kernels: each routed row's expert rows of a stacked weight
(mlcx.kernels.moe's layout), biases per stacked row, and the gated activations."""

from __future__ import annotations

import numpy as np

from mlcx.kernels.moe_options import GluActivation


def glu_numpy(gate_up: np.ndarray, glu: GluActivation) -> np.ndarray:
    """glu(gate, up) of [..., 2K] (gate first), in float64, as GluActivation.apply defines."""
    gate, up = np.split(gate_up.astype(np.float64), 2, axis=-1)
    if glu.limit is not None:
        gate = np.minimum(gate, glu.limit)
        up = np.clip(up, -glu.limit, glu.limit)
    return (up + glu.up_shift) * gate / (1 + np.exp(-glu.alpha * gate))


def expert_rows(experts: int, out: int, fused: bool, expert: int) -> np.ndarray:
    """Indices of expert `expert`'s output rows in the stack (gate rows, then up rows)."""
    if not fused:
        return np.arange(expert * out, (expert + 1) * out)
    half = out // 2
    gate = np.arange(expert * half, (expert + 1) * half)
    return np.concatenate([gate, experts * half + gate])


def experts_numpy(x, ids, weight, experts: int, out: int, fused=False, per_slot=False, bias=None):
    """out [tokens, slots, out] = each routed row times its expert's rows (+ their bias)."""
    result = np.zeros(ids.shape + (out,))
    weight = weight.astype(np.float64)
    for t, j in np.ndindex(ids.shape):
        rows = expert_rows(experts, out, fused, int(ids[t, j]))
        row = x[t, j] if per_slot else x[t]
        result[t, j] = weight[rows] @ row.astype(np.float64)
        if bias is not None:
            result[t, j] += bias[rows]
    return result
