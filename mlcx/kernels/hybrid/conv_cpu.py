"""The short causal convolution with its state, on CPU.

y[t, c] = act(bias[c] + sum_j weight[c, j] * u[t - kernel + 1 + j, c]), where u is the
sequence's inputs preceded by the kernel - 1 inputs its state keeps (zeros for a fresh
sequence). A work item is (sequence, block of channels): its window of the last kernel - 1
inputs lives in vector registers while the item walks the sequence's rows, and goes back to the
state at the end, so prefill (many rows) and decode (one) are the same kernel. The state's
[channels, kernel - 1] layout is read and written once per item (strided lanes).
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.hybrid.params import StepArrays, param, shape_vars
from mlcx.kernels.hybrid.shapes import ConvShape

KERNEL_NAME = "state_conv_cpu"
BLOCK_VECTORS = 2  # vectors of channels per work item (more items than cores at batch 1)


def vector_width(features: int, lanes: int) -> int:
    """The widest power-of-two vector of at most `lanes` that divides `features`."""
    width = lanes
    while width > 1 and features % width:
        width //= 2
    return width


def _block(channels: int, width: int) -> int:
    vectors = channels // width
    return width * next(v for v in (BLOCK_VECTORS, 1) if vectors % v == 0)


def conv_cpu(shape: ConvShape, lanes: int = 8) -> tirx.PrimFunc:
    """(x [tokens, C], weight [C, K], bias [C] if shape.bias, state [slots, C, K - 1] in place,
    state_slots, q_indptr, positions) -> y [tokens, C]."""
    c_all, taps, window = shape.channels, shape.kernel, shape.window
    width = vector_width(c_all, lanes)
    block = _block(c_all, width)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(KERNEL_NAME)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        tokens, batch, slots = shape_vars()
        x = param("x", (tokens, c_all), shape.dtype)
        weight = param("weight", (c_all, taps), shape.dtype)
        bias = param("bias", (c_all,), shape.dtype) if shape.bias else None
        state = param("state", (slots, c_all, window), shape.dtype)
        step = StepArrays.declare(batch, tokens)
        y = param("y", (tokens, c_all), shape.dtype)
        # flat views: a vector of channels is a strided run in both
        weight = T.decl_buffer((c_all * taps,), shape.dtype, data=weight.data)
        state = T.decl_buffer((slots * c_all * window,), shape.dtype, data=state.data)
        blocks = c_all // block
        with T.parallel(0, batch * blocks) as item:
            seq = item // blocks
            start, count = step.span(seq)
            slot = T.bind(step.state_slots[seq])
            fresh = T.bind(step.fresh(seq, start, count))
            for part in range(block // width):
                c0 = T.bind(item % blocks * block + part * width)
                _item(shape, (x, weight, bias, state, y), (slot, fresh, start, count), c0, width)
    return ib.get()


def _item(shape: ConvShape, bufs, seq_info, c0, width: int) -> None:
    """One block of `width` channels from c0 of one sequence."""
    x, weight, bias, state, y = bufs
    slot, fresh, start, count = seq_info
    window, lanes_of = shape.window, vec.ramp(c0, width)
    rows = T.bind(T.Cast("int64", slot) * shape.channels + c0)

    def strided(base, j, taps):
        index = base * taps + j
        return index if width == 1 else T.Ramp(index, taps, width)

    f32 = vec.vtype("float32", width)
    zero = vec.splat(vec.f32(0.0), width)
    taps = [T.bind(vec.to_f32(weight[strided(c0, j, shape.kernel)])) for j in range(shape.kernel)]
    win = T.alloc_buffer((window, width), "float32")
    with T.If(fresh):
        with T.Then():
            for j in range(window):
                T.buffer_store(win, zero, [j, vec.ramp(0, width)])
        with T.Else():
            for j in range(window):
                old = T.Cast(f32, state[strided(rows, j, window)])
                T.buffer_store(win, old, [j, vec.ramp(0, width)])
    with T.serial(start, start + count) as t:
        now = T.bind(vec.to_f32(x[t, lanes_of]))
        acc = taps[window] * now
        if bias is not None:
            acc = acc + vec.to_f32(bias[lanes_of])
        for j in range(window):
            acc = acc + taps[j] * win[j, vec.ramp(0, width)]
        if shape.activation == "silu":
            acc = vec.silu(acc, width)
        T.buffer_store(y, T.Cast(vec.vtype(shape.dtype, width), acc), [t, lanes_of])
        for j in range(window - 1):
            T.buffer_store(win, win[j + 1, vec.ramp(0, width)], [j, vec.ramp(0, width)])
        T.buffer_store(win, now, [window - 1, vec.ramp(0, width)])
    with T.If(count > 0), T.Then():
        for j in range(window):
            value = T.Cast(vec.vtype(shape.dtype, width), win[j, vec.ramp(0, width)])
            T.buffer_store(state, value, [strided(rows, j, window)])
