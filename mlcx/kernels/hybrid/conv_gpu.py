"""The short causal convolution with its state, on GPUs.

A workgroup per (sequence, block of `cols` channels), a thread per channel and row lane: lane r
computes the sequence's rows r, r + rows, ... (rows 1 for decode), consecutive threads on
consecutive channels (coalesced). Each output reads its kernel taps' inputs directly, from x
or, before the sequence's first row, from the state, so rows need no order. Only the threads of
lane 0 touch the state in memory: they read the old window into workgroup memory (zeros for a
fresh sequence), and after a barrier every thread reads it there; at the end they write the new
window (the last kernel - 1 inputs) themselves, so no thread reads a value another overwrote.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.hybrid.params import StepArrays, param, shape_vars
from mlcx.kernels.hybrid.shapes import ConvShape

KERNEL_NAME = "state_conv_gpu"
PREFILL_LAYOUT = (64, 4)  # (channels, row lanes) of a workgroup
DECODE_LAYOUT = (256, 1)


def conv_gpu(shape: ConvShape, decode: bool) -> tirx.PrimFunc:
    """Same parameters as mlcx.kernels.hybrid.conv_cpu.conv_cpu."""
    c_all, taps, window = shape.channels, shape.kernel, shape.window
    cols, rows = DECODE_LAYOUT if decode else PREFILL_LAYOUT
    cols = min(cols, c_all)
    f32 = "float32"
    with IRBuilder() as ib, T.prim_func():
        T.func_name(KERNEL_NAME + ("_decode" if decode else ""))
        T.func_attr(KERNEL_ATTRS)
        tokens, batch, slots = shape_vars()
        x = param("x", (tokens, c_all), shape.dtype)
        weight = param("weight", (c_all, taps), shape.dtype)
        bias = param("bias", (c_all,), shape.dtype) if shape.bias else None
        state = param("state", (slots, c_all, window), shape.dtype)
        step = StepArrays.declare(batch, tokens)
        y = param("y", (tokens, c_all), shape.dtype)
        seq, block = T.env_thread("blockIdx.x"), T.env_thread("blockIdx.y")
        tx = T.env_thread("threadIdx.x")
        with (
            T.launch_thread(seq, batch),
            T.launch_thread(block, (c_all + cols - 1) // cols),
            T.launch_thread(tx, cols * rows),
        ):
            col, lane = tx % cols, tx // cols
            wanted = T.bind(block * cols + col)
            channel = T.bind(T.min(wanted, c_all - 1))  # spare threads compute, never store
            start, count = step.span(seq)
            slot = T.bind(step.state_slots[seq])
            fresh = T.bind(step.fresh(seq, start, count))
            old = T.alloc_buffer((window, cols), f32, scope="shared")
            with T.If(lane == 0), T.Then():
                for j in range(window):
                    value = T.Select(fresh, T.float32(0.0), state[slot, channel, j].astype(f32))
                    T.buffer_store(old, value, [j, col])
            T.evaluate(T.tvm_storage_sync("shared"))

            def tap_input(s):
                """Input at row s of the batch (s may precede the sequence: the old window)."""
                inside = x[T.min(T.max(s, start), start + count - 1), channel].astype(f32)
                before = old[T.min(T.max(s - start + window, 0), window - 1), col]
                return T.Select(s >= start, inside, before)

            taps_f = [T.bind(weight[channel, j].astype(f32)) for j in range(taps)]
            first = bias[channel].astype(f32) if bias is not None else T.float32(0.0)
            with T.serial(0, (count + rows - 1) // rows) as it:
                t = T.bind(start + it * rows + lane)
                acc = first
                for j in range(taps):
                    acc = acc + taps_f[j] * tap_input(t - window + j)
                acc = T.bind(acc)
                if shape.activation == "silu":
                    acc = acc / (T.float32(1.0) + T.exp(-acc))
                with T.If(tirx.all(t < start + count, wanted < c_all)), T.Then():
                    T.buffer_store(y, acc.astype(shape.dtype), [t, channel])
            with T.If(tirx.all(lane == 0, wanted < c_all, count > 0)), T.Then():
                for j in range(window):
                    value = tap_input(start + count - window + j)
                    T.buffer_store(state, value.astype(shape.dtype), [slot, channel, j])
    return ib.get()
