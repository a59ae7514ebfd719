"""The WeightSpecs of a hybrid decoder's state layers (mlcx.frontends.nn.state_blocks) and of a
shared expert, from a family's weight-name table.

Slots: a Gated DeltaNet's `delta_qkv`, `delta_z`, `delta_b`, `delta_a` (one projection, in this
order), `delta_conv`, `delta_dt_bias`, its decay rate as stored: `delta_a_log` (Hugging Face's
A_log; the model keeps -exp(A_log)) or `delta_decay` (llama.cpp's ssm_a, already so),
`delta_norm` (a plain RMSNorm weight: no (1 + w) transform), `delta_out`; a short
convolution's `conv_in`, `conv_taps`, `conv_out` and their `*_bias`; a shared expert's
`shared_gate`, `shared_up`, `shared_down` and `shared_router`. The conv taps and decay
parameters stay float (VECTOR role) in every quantization.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlcx.frontends.hybrid_config import CONV, DELTA
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.schemes import Role


def _taps(rows: np.ndarray) -> np.ndarray:
    """A depthwise conv weight as [channels, taps] (Hugging Face keeps [channels, 1, taps])."""
    return rows.reshape(rows.shape[0], -1)


def _decay(a_log: np.ndarray) -> np.ndarray:
    return -np.exp(a_log.astype(np.float32))


def _one_row(rows: np.ndarray) -> np.ndarray:
    return rows.reshape(1, -1)


def _spec(layer: Any, target: str, role: Role, slots: tuple[str, ...], transform=None):
    return WeightSpec(
        layer.dst + target, role, layer.src(*slots), (transform,) if transform else ()
    )


def delta_specs(layer: Any) -> list[WeightSpec]:
    """`layer`: decoder_weights' _Layer (dst, src, names)."""
    decay = "delta_a_log" if layer.names.has("delta_a_log") else "delta_decay"
    return [
        _spec(layer, "delta.in_proj", Role.LINEAR, ("delta_qkv", "delta_z", "delta_b", "delta_a")),
        _spec(layer, "delta.conv_weight", Role.VECTOR, ("delta_conv",), _taps),
        _spec(layer, "delta.dt_bias", Role.VECTOR, ("delta_dt_bias",)),
        _spec(layer, "delta.a", Role.VECTOR, (decay,), _decay if decay == "delta_a_log" else None),
        _spec(layer, "delta.norm_weight", Role.VECTOR, ("delta_norm",)),
        _spec(layer, "delta.out_proj", Role.LINEAR, ("delta_out",)),
    ]


def conv_specs(layer: Any) -> list[WeightSpec]:
    specs = [
        _spec(layer, "conv.in_proj", Role.LINEAR, ("conv_in",)),
        _spec(layer, "conv.conv_weight", Role.VECTOR, ("conv_taps",), _taps),
        _spec(layer, "conv.out_proj", Role.LINEAR, ("conv_out",)),
    ]
    if layer.cfg.conv_bias:
        for target, slot in (("in_proj.bias", "conv_in"), ("conv_bias", "conv_taps")):
            specs.append(_spec(layer, f"conv.{target}", Role.VECTOR, (f"{slot}_bias",)))
        specs.append(_spec(layer, "conv.out_proj.bias", Role.VECTOR, ("conv_out_bias",)))
    return specs


def shared_expert_specs(layer: Any) -> list[WeightSpec]:
    return [
        _spec(layer, "moe.shared_gate_up", Role.LINEAR, ("shared_gate", "shared_up")),
        _spec(layer, "moe.shared_down", Role.LINEAR, ("shared_down",)),
        # dense, as the router (a sigmoid of one row per token)
        _spec(layer, "moe.shared_router", Role.VECTOR, ("shared_router",), _one_row),
    ]


# the token mixer's specs of a state layer, by kind
STATE_SPECS = {DELTA: delta_specs, CONV: conv_specs}
