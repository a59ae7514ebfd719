"""The image encoder's attention on CPU: `softmax(q @ permute_dims(k) * c) @ v` over
[heads, n, d] becomes mlcx's attention kernels, given the transposed keys the graph already
makes.

- n static (SigLIP's 4096 patches) -> the dense attention kernel
  (mlcx.kernels.cpu.dense_attention), its scores from int16 codes where the target has int16
  pair dot products (x86: 13+ bits a value, finer than the float16 llama.cpp multiplies there);
- n known only at run time (Qwen-VL), and with `+ window_bias(windows)` before the softmax (its
  windowed layers) -> the window attention kernel (mlcx.kernels.cpu.window_attention), which
  never builds the [n, n] mask.
"""

from __future__ import annotations

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op, is_tuple, wildcard

from mlcx.kernels.cpu.dense_attention import DenseShape, dense_attention_cpu
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.window_attention import WindowShape, window_attention_cpu
from mlcx.passes.cpu.encoder_patterns import Kernels, axes, static_shape

WINDOW_BIAS = "window_bias"  # the TE op the Qwen-VL tower builds its window mask with


def attention_rewriter(kernels: Kernels, cfg: KernelConfig):
    q, k, v, scale = wildcard(), wildcard(), wildcard(), is_const()
    kt = is_op("relax.permute_dims")(k)
    scores = is_op("relax.multiply")(is_op("relax.matmul")(q, kt), scale)
    pattern = is_op("relax.matmul")(is_op("relax.nn.softmax")(scores), v)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        qs, ks, vs = (static_shape(matches[p]) for p in (q, k, v))
        if qs is None or len(qs) != 3 or qs != ks or qs != vs or axes(matches[kt]) != [0, 2, 1]:
            return expr
        factor = matches[scale].value.numpy()
        if factor.size != 1:
            return expr
        factor = float(np.asarray(factor).reshape(()))
        shape = DenseShape(qs[0], qs[1], qs[2], factor, int16_scores=cfg.int16_pairs)
        gvar = kernels.get(shape.name, lambda: dense_attention_cpu(shape))
        keys = matches[k] if shape.packs_int16 else matches[kt]  # the int16 path reads rows
        args = relax.Tuple([matches[q], keys, matches[v]])
        return relax.call_tir(gvar, args, expr.ty)

    return pattern, rewrite


def window_rewriter(kernels: Kernels, windowed: bool):
    """Attention over [heads, n, d] with n symbolic, masked to windows where `windowed`."""
    q, k, v, scale, windows = wildcard(), wildcard(), wildcard(), is_const(), wildcard()
    kt = is_op("relax.permute_dims")(k)
    scores = is_op("relax.multiply")(is_op("relax.matmul")(q, kt), scale)
    bias = is_op("relax.call_tir")(wildcard(), is_tuple([windows]))
    if windowed:
        scores = is_op("relax.add")(scores, bias)
    pattern = is_op("relax.matmul")(is_op("relax.nn.softmax")(scores), v)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        qs, ks, vs = (static_shape(matches[p], free=1) for p in (q, k, v))
        if qs is None or len(qs) != 3 or isinstance(qs[1], int) or axes(matches[kt]) != [0, 2, 1]:
            return expr
        if windowed and matches[bias].args[0].name_hint != WINDOW_BIAS:
            return expr
        factor = np.asarray(matches[scale].value.numpy())
        if factor.size != 1:
            return expr
        shape = WindowShape(qs[0], qs[2], float(factor.reshape(())), windowed)
        gvar = kernels.get(shape.name, lambda: window_attention_cpu(shape))
        args = [matches[q], matches[kt], matches[v]] + ([matches[windows]] if windowed else [])
        return relax.call_tir(gvar, relax.Tuple(args), expr.ty)

    return pattern, rewrite
