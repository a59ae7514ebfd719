"""Ragged steps for the state kernels and their reference: transformers' own functions
(causal_conv1d_fn, torch_chunk_gated_delta_rule, torch_recurrent_gated_delta_rule) called per
sequence with the same tensors, the state taken from the sequence's slot unless its first row
has position 0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlcx.kernels.hybrid.shapes import ConvShape, DeltaShape

NUM_SLOTS = 6


@dataclass
class Step:
    """One step's arrays: sequences of `lens` rows starting at positions `starts`."""

    lens: list[int]
    starts: list[int]
    slots: np.ndarray
    q_indptr: np.ndarray
    positions: np.ndarray

    @staticmethod
    def of(lens: list[int], starts: list[int], slots: list[int]) -> Step:
        q_indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        positions = np.concatenate([np.arange(p, p + n) for p, n in zip(starts, lens, strict=True)])
        return Step(lens, starts, np.array(slots, np.int32), q_indptr, positions.astype(np.int32))

    @property
    def tokens(self) -> int:
        return int(self.q_indptr[-1])

    def arrays(self) -> list[np.ndarray]:
        """state_slots, q_indptr, positions: the kernels' order."""
        return [self.slots, self.q_indptr, self.positions]

    def rows(self, i: int) -> slice:
        return slice(int(self.q_indptr[i]), int(self.q_indptr[i + 1]))


def poison(state: np.ndarray, step: Step) -> np.ndarray:
    """The state with NaN in every fresh sequence's slot (which the kernels must not read)."""
    state = state.copy()
    for slot, start in zip(step.slots, step.starts, strict=True):
        if start == 0:
            state[slot] = np.nan
    return state


def conv_inputs(rng, shape: ConvShape, step: Step) -> dict[str, np.ndarray]:
    c, k = shape.channels, shape.kernel
    out = {
        "x": rng.standard_normal((step.tokens, c)).astype(np.float32),
        "weight": rng.standard_normal((c, k)).astype(np.float32),
        "state": rng.standard_normal((NUM_SLOTS, c, k - 1)).astype(np.float32),
    }
    if shape.bias:
        out["bias"] = rng.standard_normal(c).astype(np.float32)
    return out


def conv_reference(shape: ConvShape, step: Step, inputs) -> tuple[np.ndarray, np.ndarray]:
    """(y, state after the step) through transformers' causal_conv1d_fn on [state | x]."""
    from transformers.models.qwen3_5.modeling_qwen3_5 import causal_conv1d_fn

    window = shape.window
    state = inputs["state"].copy()
    ys = []
    bias = torch.from_numpy(inputs["bias"]) if shape.bias else None
    for i, slot in enumerate(step.slots):
        x = torch.from_numpy(inputs["x"][step.rows(i)]).T[None]
        old = torch.from_numpy(state[slot])[None]
        if step.starts[i] == 0:
            old = torch.zeros(1, shape.channels, window)
        full = torch.cat([old, x], -1)
        weight = torch.from_numpy(inputs["weight"])
        y = causal_conv1d_fn(full, weight, bias, activation=shape.activation)[..., window:]
        ys.append(y[0].T.numpy())
        state[slot] = full[0, :, -window:].numpy()
    return np.concatenate(ys), state


def delta_inputs(rng, shape: DeltaShape, step: Step) -> dict[str, np.ndarray]:
    hv = shape.v_heads
    a = rng.standard_normal((step.tokens, hv))
    decay = np.exp(rng.standard_normal(hv))[None] * np.log1p(np.exp(a))  # exp(A_log) softplus
    return {
        "qkv": rng.standard_normal((step.tokens, shape.width)).astype(np.float32),
        "g": (-decay).astype(np.float32),
        "beta": (1 / (1 + np.exp(-rng.standard_normal((step.tokens, hv))))).astype(np.float32),
        "state": (rng.standard_normal((NUM_SLOTS, hv, shape.k_dim, shape.v_dim)) * 0.3).astype(
            np.float32
        ),
    }


def delta_reference(
    shape: DeltaShape, step: Step, inputs, chunked: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(o, state after the step) through transformers' chunked (or recurrent) gated delta rule
    with its in-kernel L2 norm; tiled head order repeats q and k whole before the call."""
    from transformers.models.qwen3_5.modeling_qwen3_5 import (
        torch_chunk_gated_delta_rule,
        torch_recurrent_gated_delta_rule,
    )

    rule = torch_chunk_gated_delta_rule if chunked else torch_recurrent_gated_delta_rule
    hk, hv, dk, dv = shape.k_heads, shape.v_heads, shape.k_dim, shape.v_dim
    state = inputs["state"].copy()
    outs = []
    for i, slot in enumerate(step.slots):
        rows = step.rows(i)
        n = rows.stop - rows.start
        qkv = torch.from_numpy(inputs["qkv"][rows])[None]
        q, k, v = torch.split(qkv, [hk * dk, hk * dk, hv * dv], dim=-1)
        q, k, v = q.reshape(1, n, hk, dk), k.reshape(1, n, hk, dk), v.reshape(1, n, hv, dv)
        if shape.head_order == "tiled" and hv != hk:
            q, k = q.repeat(1, 1, hv // hk, 1), k.repeat(1, 1, hv // hk, 1)
        initial = None if step.starts[i] == 0 else torch.from_numpy(state[slot])[None]
        o, final = rule(
            q,
            k,
            v,
            g=torch.from_numpy(inputs["g"][rows])[None],
            beta=torch.from_numpy(inputs["beta"][rows])[None],
            initial_state=initial,
            output_final_state=True,
            use_qk_l2norm_in_kernel=True,
        )
        outs.append(o[0].numpy())
        state[slot] = final[0].numpy()
    return np.concatenate(outs), state
