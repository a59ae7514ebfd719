"""Relax passes for an image encoder on CPU: its linear layers and its attention become mlcx's
hand-written kernels. Left to TVM's CPU legalization they are naive loop nests that ran a
SigLIP-So400m image (4096 patches) for many minutes.

- `x @ permute_dims(W)` with W a 2-D float32 weight (nn.Linear) -> the float linear kernel
  (mlcx.kernels.cpu.flinear), as the text model's float linears; opted in (BuildOptions
  .encoder_linears "int16") and where the target has int16 pair dot products, the int16 GEMM
  (mlcx.kernels.cpu.i16linear: rows on 12-bit codes, about float16's error, twice a float32
  FMA's multiplies).
- `softmax(q @ permute_dims(k) * c) @ v` over [heads, n, d] -> the dense attention kernel
  (mlcx.kernels.cpu.dense_attention), given the transposed keys the graph already makes; its
  scores from int16 codes where the target has int16 pair dot products (x86: 13+ bits a
  value, finer than the float16 llama.cpp multiplies there).

- `gelu_tanh(x + bias)` over [rows, cols] -> a vectorized kernel (mlcx.kernels.cpu.gelu_rows);
  TVM's legalized one was a scalar loop, 3.7 of SigLIP-So400m's 32 s an image on one core;
  likewise `layer_norm` over the last axis (mlcx.kernels.cpu.layer_norm_rows).

Only the encoder's build uses them: the text model's linears are mlcx's own TE linears
(mlcx.passes.cpu.fuse_linear) and its attention is paged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import is_const, is_op, rewrite_call, wildcard

from mlcx.kernels.cpu.dense_attention import DenseShape, dense_attention_cpu
from mlcx.kernels.cpu.gelu_rows import GeluRows, gelu_rows_cpu
from mlcx.kernels.cpu.i16linear import build_int16_linear, int16_name
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.layer_norm_rows import LayerNormRows, layer_norm_rows_cpu
from mlcx.kernels.cpu.linear_kernels import build_linear, can_build
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows
from mlcx.quantization.formats import DenseFormat

F32 = DenseFormat("float32")


def _shape(expr: relax.Expr) -> tuple[int, ...] | None:
    """The static float32 shape of expr; None otherwise."""
    info = expr.ty
    if not isinstance(info, relax.TensorType) or info.dtype != "float32":
        return None
    if info.shape is None or not all(isinstance(s, tvm.tirx.IntImm) for s in info.shape.values):
        return None
    return tuple(int(s) for s in info.shape.values)


def _axes(call: relax.Call) -> list[int] | None:
    axes = call.attrs.axes
    return None if axes is None else [int(a) for a in axes]


class _Kernels:
    """PrimFuncs added to the module once per shape, by name."""

    def __init__(self, mod: tvm.IRModule):
        self.builder = relax.BlockBuilder(mod)
        self.added: dict[str, relax.GlobalVar] = {}

    def get(self, name: str, make: Callable[[], tvm.tirx.PrimFunc]) -> relax.GlobalVar:
        if name not in self.added:
            self.added[name] = self.builder.add_func(make(), name)
        return self.added[name]


def _linear_rewriter(kernels: _Kernels, cfg: KernelConfig, transposed: bool, int16: bool):
    """x @ permute_dims(W) for W [out, in] (nn.Linear), or x @ W for W [in, out] (Gemma 3's
    projector), which is transposed once per call for the kernel."""
    x, w = wildcard(), wildcard()
    second = is_op("relax.permute_dims")(w) if transposed else w
    pattern = is_op("relax.matmul")(x, second)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        xs, ws = _shape(matches[x]), _shape(matches[w])
        if xs is None or ws is None or len(xs) != 2 or len(ws) != 2:
            return expr
        if transposed and _axes(matches[second]) not in (None, [1, 0]):
            return expr
        weight = matches[w] if transposed else relax.op.permute_dims(matches[w])
        ws = ws if transposed else ws[::-1]
        # any shape (a patch embedding has 3 * 14 * 14 features, SigLIP's MLP 4304): the
        # kernel serves ragged features and rows itself
        spec = LinearSpec(PlainRows(ws[1]), F32, ws[0])
        if not can_build(spec, cfg):
            return expr
        name, build = (int16_name(spec), build_int16_linear) if int16 else (spec.name, build_linear)
        gvar = kernels.get(name, lambda: build(spec, cfg))
        args = relax.Tuple([matches[x], weight])
        return relax.call_tir(gvar, args, relax.TensorType((xs[0], ws[0]), "float32"))

    return pattern, rewrite


def _attention_rewriter(kernels: _Kernels, cfg: KernelConfig):
    q, k, v, scale = wildcard(), wildcard(), wildcard(), is_const()
    kt = is_op("relax.permute_dims")(k)
    scores = is_op("relax.multiply")(is_op("relax.matmul")(q, kt), scale)
    pattern = is_op("relax.matmul")(is_op("relax.nn.softmax")(scores), v)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        qs, ks, vs = (_shape(matches[p]) for p in (q, k, v))
        if qs is None or len(qs) != 3 or qs != ks or qs != vs or _axes(matches[kt]) != [0, 2, 1]:
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


def _gelu_rewriter(kernels: _Kernels, cfg: KernelConfig):
    """gelu_tanh(x + bias) over [rows, cols] (SigLIP's MLP) -> mlcx.kernels.cpu.gelu_rows."""
    x, bias = wildcard(), wildcard()
    pattern = is_op("relax.nn.gelu_tanh")(is_op("relax.add")(x, bias))

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        xs, bs = _shape(matches[x]), _shape(matches[bias])
        if xs is None or bs is None or len(xs) != 2 or bs != xs[1:]:
            return expr
        shape = GeluRows(xs[0], xs[1], cfg.threads)
        gvar = kernels.get(shape.name, lambda: gelu_rows_cpu(shape))
        return relax.call_tir(gvar, relax.Tuple([matches[x], matches[bias]]), expr.ty)

    return pattern, rewrite


def _layer_norm_rewriter(kernels: _Kernels, cfg: KernelConfig):
    """layer_norm over the last axis of [rows, cols] -> mlcx.kernels.cpu.layer_norm_rows."""
    x, gamma, beta = wildcard(), wildcard(), wildcard()
    pattern = is_op("relax.nn.layer_norm")(x, gamma, beta)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        xs = _shape(matches[x])
        if xs is None or len(xs) != 2 or _shape(matches[gamma]) != xs[1:]:
            return expr
        attrs = expr.attrs
        last = [int(a) % 2 for a in attrs.axes] == [1]
        if not (last and attrs.center and attrs.scale) or _shape(matches[beta]) != xs[1:]:
            return expr
        shape = LayerNormRows(xs[0], xs[1], float(attrs.epsilon), cfg.threads)
        gvar = kernels.get(shape.name, lambda: layer_norm_rows_cpu(shape))
        args = relax.Tuple([matches[x], matches[gamma], matches[beta]])
        return relax.call_tir(gvar, args, expr.ty)

    return pattern, rewrite


def encoder_kernels_cpu(cfg: KernelConfig, int16_linears: bool = False) -> tvm.transform.Pass:
    """`int16_linears`: the float linears on int16 codes (i16linear) where cfg.int16_pairs."""
    int16 = int16_linears and cfg.int16_pairs

    @tvm.transform.module_pass(opt_level=0, name="mlcx.EncoderKernelsCPU")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        kernels = _Kernels(mod)
        rewriters = [
            _attention_rewriter(kernels, cfg),
            _gelu_rewriter(kernels, cfg),
            _layer_norm_rewriter(kernels, cfg),
            _linear_rewriter(kernels, cfg, transposed=True, int16=int16),
            _linear_rewriter(kernels, cfg, transposed=False, int16=int16),
        ]
        for gvar, func in list(mod.functions_items()):
            if isinstance(func, relax.Function):
                for pattern, rewrite in rewriters:
                    func = rewrite_call(pattern, rewrite, func)
                kernels.builder.update_func(gvar, func)
        return relax.transform.DeadCodeElimination()(kernels.builder.get())

    return _pass
