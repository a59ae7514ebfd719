"""Relax passes for an image encoder on CPU: its linear layers and its attention become mlcx's
hand-written kernels. Left to TVM's CPU legalization they are naive loop nests that ran a
SigLIP-So400m image (4096 patches) for many minutes.

- `x @ permute_dims(W)` with W a 2-D float32 weight (nn.Linear) -> the float linear kernel
  (mlcx.kernels.cpu.flinear), as the text model's float linears; opted in (BuildOptions
  .encoder_linears "int16") and where the target has int16 pair dot products, the int16 GEMM
  (mlcx.kernels.cpu.i16linear: rows on 12-bit codes, about float16's error, twice a float32
  FMA's multiplies).
- attention -> mlcx's dense and window attention kernels (mlcx.passes.cpu.encoder_attention).

- `gelu_tanh(x + bias)` over [rows, cols] -> a vectorized kernel (mlcx.kernels.cpu.gelu_rows);
  TVM's legalized one was a scalar loop, 3.7 of SigLIP-So400m's 32 s an image on one core;
  likewise `layer_norm` over the last axis (mlcx.kernels.cpu.layer_norm_rows).

Only the encoder's build uses them: the text model's linears are mlcx's own TE linears
(mlcx.passes.cpu.fuse_linear) and its attention is paged.
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.relax.dpl import is_op, rewrite_call, wildcard

from mlcx.kernels.cpu.gelu_rows import GeluRows, gelu_rows_cpu
from mlcx.kernels.cpu.i16linear import build_int16_linear, int16_name
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.layer_norm_rows import LayerNormRows, layer_norm_rows_cpu
from mlcx.kernels.cpu.linear_kernels import build_linear, can_build
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows
from mlcx.passes.cpu.encoder_attention import attention_rewriter, window_rewriter
from mlcx.passes.cpu.encoder_patterns import Kernels, axes, static_shape
from mlcx.quantization.formats import DenseFormat

F32 = DenseFormat("float32")


def _linear_rewriter(kernels: Kernels, cfg: KernelConfig, transposed: bool, int16: bool):
    """x @ permute_dims(W) for W [out, in] (nn.Linear), or x @ W for W [in, out] (Gemma 3's
    projector), which is transposed once per call for the kernel."""
    x, w = wildcard(), wildcard()
    second = is_op("relax.permute_dims")(w) if transposed else w
    pattern = is_op("relax.matmul")(x, second)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        # the kernel takes any number of token rows: only the features must be known
        xs, ws = static_shape(matches[x], free=0), static_shape(matches[w])
        if xs is None or ws is None or len(xs) != 2 or len(ws) != 2:
            return expr
        if transposed and axes(matches[second]) not in (None, [1, 0]):
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


def _gelu_rewriter(kernels: Kernels, cfg: KernelConfig):
    """gelu_tanh(x + bias) over [rows, cols] (SigLIP's MLP) -> mlcx.kernels.cpu.gelu_rows."""
    x, bias = wildcard(), wildcard()
    pattern = is_op("relax.nn.gelu_tanh")(is_op("relax.add")(x, bias))

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        xs, bs = static_shape(matches[x]), static_shape(matches[bias])
        if xs is None or bs is None or len(xs) != 2 or bs != xs[1:]:
            return expr
        shape = GeluRows(xs[0], xs[1], cfg.threads)
        gvar = kernels.get(shape.name, lambda: gelu_rows_cpu(shape))
        return relax.call_tir(gvar, relax.Tuple([matches[x], matches[bias]]), expr.ty)

    return pattern, rewrite


def _layer_norm_rewriter(kernels: Kernels, cfg: KernelConfig):
    """layer_norm over the last axis of [rows, cols] -> mlcx.kernels.cpu.layer_norm_rows."""
    x, gamma, beta = wildcard(), wildcard(), wildcard()
    pattern = is_op("relax.nn.layer_norm")(x, gamma, beta)

    def rewrite(expr: relax.Expr, matches) -> relax.Expr:
        xs = static_shape(matches[x])
        if xs is None or len(xs) != 2 or static_shape(matches[gamma]) != xs[1:]:
            return expr
        attrs = expr.attrs
        last = [int(a) % 2 for a in attrs.axes] == [1]
        if not (last and attrs.center and attrs.scale) or static_shape(matches[beta]) != xs[1:]:
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
        kernels = Kernels(mod)
        rewriters = [
            attention_rewriter(kernels, cfg),
            window_rewriter(kernels, windowed=True),
            window_rewriter(kernels, windowed=False),
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
