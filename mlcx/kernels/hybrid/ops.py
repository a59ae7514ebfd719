"""The state layers' kernels one model uses, built once per shape and called from the `nn` graph.

Entry points (a model family calls these from its layers; shapes and dtypes in
mlcx.kernels.hybrid.shapes):

    ops = StateOps("cpu" | "gpu", target)            # target: the TVM target (GPU: required)
    step = StateStep(positions, q_indptr, state_slots)  # int32 [tokens], [batch + 1], [batch]
    y, conv_state = ops.conv(x, conv_state, step, weight, bias, shape, decode)
        x [tokens, channels] (shape.dtype), weight [channels, kernel], bias [channels] or None,
        conv_state [slots, channels, kernel - 1] (shape.dtype) -> y [tokens, channels]: the
        causal depthwise convolution, then shape.activation; the state updated in place.
    o, recurrent = ops.delta_rule(qkv, g, beta, recurrent, step, shape, decode)
        qkv [tokens, 2 * k_heads * k_dim + v_heads * v_dim] (the conv's output, shape.dtype),
        g [tokens, v_heads] float32 (= -exp(A_log) * softplus(a + dt_bias)), beta [tokens,
        v_heads] float32 (= sigmoid(b)), recurrent [slots, v_heads, k_dim, v_dim] float32
        -> o [tokens, v_heads, v_dim] (shape.dtype); q and k are L2-normalized and mapped to
        v heads (shape.head_order) inside; the state updated in place.
    state = ops.copy_states(state, pairs)              # pairs int32 [n, 2]: src, dst slots

`decode`: every sequence of the step brings exactly one row (the decode function; the decode
kernels read no other). The sequences of a step hold distinct slots (the state updates run in
parallel). A sequence whose first row of the step has position 0 starts from a zero state; the
others continue from their slot. On GPUs the delta rule's prefill keeps float32 scratch of
(2 * CHUNK + v_dim + k_dim + 3) values per row and v head between its three kernels.

Fused in: the L2 norm of q and k, their map to v heads, the conv's bias and SiLU. Left to the
graph: the output RMSNormGated (rmsnorm(o) * silu(z)), the gates g and beta, LFM2's B and C
gates: elementwise work every pipeline already fuses and schedules (no kernel falls back).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tvm import tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op
from tvm.target import Target

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.hybrid.conv_cpu import conv_cpu
from mlcx.kernels.hybrid.conv_gpu import conv_gpu
from mlcx.kernels.hybrid.copy import copy_states
from mlcx.kernels.hybrid.delta_cpu_decode import delta_decode_cpu
from mlcx.kernels.hybrid.delta_cpu_prefill import delta_prefill_cpu
from mlcx.kernels.hybrid.delta_gpu_chunks import delta_chunks_gpu, delta_solve_gpu
from mlcx.kernels.hybrid.delta_gpu_decode import delta_decode_gpu
from mlcx.kernels.hybrid.delta_gpu_scan import delta_scan_gpu
from mlcx.kernels.hybrid.shapes import CHUNK, ConvShape, DeltaShape

KINDS = ("cpu", "gpu")


@dataclass
class StateStep:
    """The step arrays the state kernels read, as graph tensors."""

    positions: nn.Tensor
    q_indptr: nn.Tensor
    state_slots: nn.Tensor

    def arrays(self) -> list[nn.Tensor]:
        """In the kernels' parameter order."""
        return [self.state_slots, self.q_indptr, self.positions]


def _private(func: tirx.PrimFunc) -> tirx.PrimFunc:
    # one PrimFunc serves every layer of its shape; the IRModule names it once
    return func.without_attr("global_symbol")


class StateOps:
    """Builds the state kernels for one kernel kind ("cpu" or "gpu")."""

    def __init__(self, kind: str, target: Target | None = None):
        if kind not in KINDS:
            raise ValueError(f"state kernels are built for cpu or gpu, not {kind!r}")
        if kind == "gpu" and target is None:
            raise ValueError("GPU state kernels need the TVM target")
        self.kind = kind
        self.target = target
        self.cpu = KernelConfig.for_target(target) if kind == "cpu" and target else KernelConfig()

    @functools.cache  # noqa: B019 (one StateOps per model)
    def _conv(self, shape: ConvShape, decode: bool) -> tirx.PrimFunc:
        if self.kind == "cpu":
            return _private(conv_cpu(shape, self.cpu.lanes))
        return _private(conv_gpu(shape, decode))

    @functools.cache  # noqa: B019
    def _delta(self, shape: DeltaShape, decode: bool) -> tuple[tirx.PrimFunc, ...]:
        if self.kind == "cpu":
            build = delta_decode_cpu if decode else delta_prefill_cpu
            return (_private(build(shape, self.cpu.lanes, self.cpu.registers)),)
        if decode:
            return (_private(delta_decode_gpu(shape)),)
        kernels = (delta_chunks_gpu(shape), delta_solve_gpu(shape), delta_scan_gpu(shape))
        return tuple(_private(k) for k in kernels)

    @functools.cache  # noqa: B019
    def _copy(self, row: tuple[int, ...], dtype: str) -> tirx.PrimFunc:
        return _private(copy_states(row, dtype, self.kind == "gpu"))

    def conv(
        self,
        x: nn.Tensor,
        state: nn.Tensor,
        step: StateStep,
        weight: nn.Tensor,
        bias: nn.Tensor | None,
        shape: ConvShape,
        decode: bool,
    ) -> tuple[nn.Tensor, nn.Tensor]:
        if (bias is not None) != shape.bias:
            raise ValueError("pass a conv bias exactly when the ConvShape has one")
        _check("conv input", x, shape.dtype, shape.channels)
        _check("conv state", state, shape.dtype, shape.window)
        tensors = [x, weight] + ([bias] if bias is not None else [])
        args = [*tensors, state, *step.arrays()]
        out = [nn.Tensor.placeholder(x.shape, x.dtype), _like(state)]
        y, state = op.tensor_ir_inplace_op(
            self._conv(shape, decode), "state_conv", args, [-1, len(tensors)], out
        )
        return y, state

    def delta_rule(
        self,
        qkv: nn.Tensor,
        g: nn.Tensor,
        beta: nn.Tensor,
        state: nn.Tensor,
        step: StateStep,
        shape: DeltaShape,
        decode: bool,
    ) -> tuple[nn.Tensor, nn.Tensor]:
        _check("delta rule qkv", qkv, shape.dtype, shape.width)
        for name, tensor, last in (("g", g, shape.v_heads), ("beta", beta, shape.v_heads)):
            _check(f"delta rule {name}", tensor, "float32", last)
        _check("recurrent state", state, "float32", shape.v_dim)
        tokens = qkv.shape[0]
        o = nn.Tensor.placeholder([tokens, shape.v_heads, shape.v_dim], shape.dtype)
        kernels = self._delta(shape, decode)
        if len(kernels) == 1:
            args = [qkv, g, beta, state, *step.arrays()]
            return op.tensor_ir_inplace_op(
                kernels[0], "delta_rule", args, [-1, 3], [o, _like(state)]
            )
        chunks, solve, scan = kernels
        hv = shape.v_heads
        scratch = [
            nn.Tensor.placeholder([tokens, hv, 3], "float32"),
            nn.Tensor.placeholder([tokens, hv, CHUNK], "float32"),
            nn.Tensor.placeholder([tokens, hv, CHUNK], "float32"),
        ]
        rows, a, p = op.tensor_ir_op(chunks, "delta_chunks", [qkv, g, beta, step.q_indptr], scratch)
        u = nn.Tensor.placeholder([tokens, hv, shape.v_dim + shape.k_dim], "float32")
        u = op.tensor_ir_op(solve, "delta_solve", [qkv, beta, step.q_indptr, rows, a], u)
        args = [qkv, rows, p, u, state, *step.arrays()]
        return op.tensor_ir_inplace_op(scan, "delta_scan", args, [-1, 4], [o, _like(state)])

    def copy_states(self, state: nn.Tensor, pairs: nn.Tensor) -> nn.Tensor:
        row = tuple(int(d) for d in state.shape[1:])
        kernel = self._copy(row, state.dtype)
        return op.tensor_ir_inplace_op(kernel, "copy_states", [state, pairs], [0], _like(state))


def _check(what: str, tensor: nn.Tensor, dtype: str, last: int) -> None:
    if tensor.dtype != dtype or int(tensor.shape[-1]) != last:
        raise ValueError(
            f"{what} must be {dtype} with {last} in its last axis, not {tensor.dtype} "
            f"{list(tensor.shape)}: build the shape (mlcx.kernels.hybrid.shapes) from the model"
        )


def _like(tensor: nn.Tensor) -> nn.Tensor:
    return nn.Tensor.placeholder(tensor.shape, tensor.dtype)
