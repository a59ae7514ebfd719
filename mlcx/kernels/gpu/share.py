"""Activations of one step (eight input features) for a lane, shared by groups of four lanes.

Lane j of a group loads features j and 4 + j; the group's other values arrive through subgroup
shuffles. Shuffles by a uniform distance (up/down) keep lane indices relative, so this works for
any subgroup size that is a multiple of four (SwiftShader: 4, lavapipe: 8, NVIDIA/Apple: 32)
without knowing it; a lane picks each value from the shuffle that reached it.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.moe_options import SILU, GluActivation

WIDTH = 4
_MASK = 0xFFFFFFFF
_WARP = 32  # only CUDA reads it (segment arithmetic); shuffles stay within WIDTH lanes


def _f32(x: tirx.Buffer, *index):
    value = x[index]
    return value if x.dtype == "float32" else value.astype("float32")


def _input(x: tirx.Buffer, token, k, swiglu: int | None, glu: GluActivation = SILU):
    """Feature k of the linear's input: x itself, or glu(gate, up) (silu(gate) * up by default)
    of x = [gate | up] with `swiglu` features in each half (the activation that feeds a down
    projection, fused)."""
    if swiglu is None:
        return _f32(x, token, k)
    gate = T.bind(_f32(x, token, k))
    const = lambda v: tirx.const(v, "float32")  # noqa: E731
    return glu.apply(gate, _f32(x, token, swiglu + k), T.exp, const)


def _shared(value, lane) -> list[tirx.PrimExpr]:
    """The four values of `value` held by a lane's group, in lane order."""
    mask = tirx.const(_MASK, "uint32")
    down = [T.bind(T.tvm_warp_shuffle_down(mask, value, d, WIDTH, _WARP)) for d in (1, 2, 3)]
    up = [T.bind(T.tvm_warp_shuffle_up(mask, value, d, WIDTH, _WARP)) for d in (1, 2, 3)]
    j = T.bind(lane % WIDTH)
    out = []
    for p in range(WIDTH):
        # from the lane at distance p - j: itself, or a shuffle down / up
        pick = [
            value if p == q else (down[p - q - 1] if p > q else up[q - p - 1]) for q in range(4)
        ]
        out.append(
            T.bind(
                tirx.Select(
                    j == 0,
                    pick[0],
                    tirx.Select(j == 1, pick[1], tirx.Select(j == 2, pick[2], pick[3])),
                )
            )
        )
    return out


def _xor(value, lane, distance: int):
    """The value of the lane `distance` away in the xor sense (distance 1 or 2), from uniform
    shuffles: lanes whose bit is set look up, the others down."""
    mask = tirx.const(_MASK, "uint32")
    # bound first: a select of two calls is emitted as an if/else, and browsers refuse shuffles
    # under control flow that differs between lanes
    up = T.bind(T.tvm_warp_shuffle_up(mask, value, distance, WIDTH, _WARP))
    down = T.bind(T.tvm_warp_shuffle_down(mask, value, distance, WIDTH, _WARP))
    return T.Select((lane & distance) != 0, up, down)


def allreduce(value, lane, width: int = WIDTH):
    """The sum of `value` over each group of `width` (2 or 4) lanes, in every lane."""
    if width not in (2, 4):
        raise ValueError(f"lane groups of 2 or 4 reduce by shuffles, not {width}")
    total = T.bind(value + _xor(value, lane, 1))
    return T.bind(total + _xor(total, lane, 2)) if width == 4 else total


def step_activations(
    x: tirx.Buffer, token, k0, lane, cfg: GpuConfig, swiglu: int | None = None, glu=SILU
) -> list[tirx.PrimExpr]:
    """Input features k0 .. k0 + 7 of `token` as float32 values in this lane."""
    if not cfg.subgroups:
        return [T.bind(_input(x, token, k0 + i, swiglu, glu)) for i in range(2 * WIDTH)]
    j = lane % WIDTH
    low = T.bind(_input(x, token, k0 + j, swiglu, glu))
    high = T.bind(_input(x, token, k0 + WIDTH + j, swiglu, glu))
    return _shared(low, lane) + _shared(high, lane)
