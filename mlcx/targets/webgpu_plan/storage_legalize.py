"""Read 8-bit and (optionally) 16-bit float weights through 32-bit words in WGSL kernels.

WGSL has no 8-bit types, and `f16` needs the shader-f16 feature (SwiftShader and some phones lack
it), yet GGUF blocks store int8 codes and f16 scales. Rather than re-encoding the weights (the
artifact keeps the CPU target's bytes and index), each device kernel's int8/uint8 (and, for f32
models, float16) buffer parameters become `array<u32>` and every element read is decoded in
place: a byte is shifted out and sign-extended; a half is widened to f32 bit by bit (zero and
subnormal halves by scaling; no weight here is Inf or NaN). Weights are only ever read, and read
straight into a cast, which is the one pattern this rewrite accepts.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import ir, tirx

from mlcx.targets.webgpu_plan.schema import PlanError

BITS = {"int8": 8, "uint8": 8, "float16": 16}


def _u32(value: int) -> tirx.IntImm:
    return tirx.IntImm("uint32", value)


def _byte(words, index, signed: bool):
    i = tirx.Cast("int32", index)
    byte = tirx.Cast("int32", (words[i >> 2] >> tirx.Cast("uint32", (i & 3) * 8)) & _u32(0xFF))
    if not signed:
        return byte
    b8 = tirx.Var("b8", "int32")
    return tirx.Let(b8, byte, b8 - ((b8 & 0x80) << 1))


def _half(words, index):
    i = tirx.Cast("int32", index)
    h16 = tirx.Var("h16", "uint32")
    bits = (words[i >> 1] >> tirx.Cast("uint32", (i & 1) * 16)) & _u32(0xFFFF)
    sign = (h16 & _u32(0x8000)) << _u32(16)
    exponent = (h16 >> _u32(10)) & _u32(0x1F)
    mantissa = h16 & _u32(0x3FF)
    normal = sign | ((exponent + _u32(127 - 15)) << _u32(23)) | (mantissa << _u32(13))
    small = tirx.Cast("float32", mantissa) * tirx.FloatImm("float32", 2.0**-24)
    small = tirx.Select(sign != _u32(0), -small, small)
    value = tirx.Select(exponent == _u32(0), small, tirx.reinterpret("float32", normal))
    return tirx.Let(h16, bits, value)


def _decode(words, index, dtype: str):
    return _half(words, index) if dtype == "float16" else _byte(words, index, dtype == "int8")


def _element_dtype(param) -> str | None:
    ty = param.ty
    return str(ty.element_type.dtype) if isinstance(ty, ir.PointerType) else None


class _Legalizer:
    def __init__(self, func: tirx.PrimFunc, dtypes: set[str]):
        self.name = str(func.attrs["global_symbol"])
        self.params: list = []
        self.swapped: list = []  # (old data var, new data var, dtype)
        self.buffers: list = []  # (old buffer, new word buffer, dtype)
        for param in func.params:
            dtype = _element_dtype(param)
            if dtype in dtypes:
                word_ptr = tirx.Var(param.name, ir.PointerType(ir.PrimType("uint32"), "global"))
                self.swapped.append((param, word_ptr, dtype))
                param = word_ptr
            self.params.append(param)

    def decl(self, stmt):
        for old, new, dtype in self.swapped:
            if stmt.data.same_as(old):
                (size,) = stmt.buffer.shape
                words = (size * BITS[dtype] + 31) // 32
                buffer = tirx.decl_buffer((words,), "uint32", stmt.buffer.name, data=new)
                self.buffers.append((stmt.buffer, buffer, dtype))
                return tirx.DeclBuffer(buffer, data=new)
        return stmt

    def cast(self, expr):
        load = expr.value
        if isinstance(load, tvm.ir.TensorLoad):
            for old, words, dtype in self.buffers:
                if load.source.same_as(old):
                    (index,) = load.indices
                    return tirx.Cast(str(expr.ty.dtype), _decode(words, index, dtype))
        return expr

    def check(self, body) -> None:
        def visit(load):
            if any(load.source.same_as(old) for old, _, _ in self.buffers):
                raise PlanError(
                    f"{self.name}: a sub-word weight is read other than straight into a cast; "
                    "WGSL cannot hold it"
                )

        tvm_ffi.structural_walk(body, (tvm.ir.TensorLoad, visit))


def legalize_storage(func: tirx.PrimFunc, keep_f16: bool) -> tirx.PrimFunc:
    """`func`: a lowered WebGPU device kernel (flat buffers). With `keep_f16`, float16
    parameters stay (the device has shader-f16); 8-bit ones are always rewritten."""
    dtypes = {"int8", "uint8"} | (set() if keep_f16 else {"float16"})
    legalizer = _Legalizer(func, dtypes)
    if not legalizer.swapped:
        return func
    body = tvm_ffi.structural_map(
        func.body, [(tirx.DeclBuffer, legalizer.decl), (tirx.Cast, legalizer.cast)]
    )
    legalizer.check(body)
    return tirx.PrimFunc(legalizer.params, body, attrs=func.attrs)


def uses_f16(func: tirx.PrimFunc) -> bool:
    return any(_element_dtype(p) == "float16" for p in func.params)
