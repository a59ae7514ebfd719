"""numpy references of what a fused linear kernel reads before its matmul."""

from __future__ import annotations

import numpy as np


def input_rows(kind: str, x: np.ndarray, norm: np.ndarray | None = None, eps: float = 1e-5):
    """The rows a linear multiplies: x itself ("plain"), RMSNorm(x) * norm ("rmsnorm"), or
    silu(gate) * up of x = [gate | up] ("swiglu"); in float64."""
    x = x.astype(np.float64)
    if kind == "rmsnorm":
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * norm
    if kind == "swiglu":
        gate, up = np.split(x, 2, axis=-1)
        return gate / (1 + np.exp(-gate)) * up
    return x
