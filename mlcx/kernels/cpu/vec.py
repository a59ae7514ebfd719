"""Vector expressions for hand-written TIR kernels.

Everything here is plain TIR on logical vectors; LLVM legalizes them to the host's registers.
The int16 dot product is written in the shape LLVM's x86 backend recognizes as `vpmaddwd`
(and folds into `vpdpwssd` on VNNI hosts); other backends get their own widening multiplies.
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import tirx as T

LOG2E = 1.0 / math.log(2.0)
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4  # ln 2 split so that n * LN2_HI is exact
# Cephes expf: 2**n * p(r) with r = x - n*ln2 in [-ln2/2, ln2/2], about 1 ulp.
EXP_POLY = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
EXP_MAX = 88.0  # 2**127 * p(r) stays finite
EXP_MIN = -87.33654


def ramp(base, lanes: int):
    """Indices base .. base + lanes - 1; a scalar index when lanes is 1."""
    return base if lanes == 1 else T.Ramp(base, 1, lanes)


def splat(value, lanes: int):
    return value if lanes == 1 else T.Broadcast(value, lanes)


def vtype(dtype: str, lanes: int) -> str:
    return dtype if lanes == 1 else f"{dtype}x{lanes}"


def f32(value) -> tirx.PrimExpr:
    return tirx.const(value, "float32")


def lanes_of(expr) -> int:
    return int(expr.ty.dtype.lanes)


def to_f32(expr) -> tirx.PrimExpr:
    """Cast to float32 with the same number of lanes."""
    return T.Cast(vtype("float32", lanes_of(expr)), expr)


def halves(v, lanes: int):
    """(low half, high half) of a vector."""
    half = lanes // 2
    return T.Shuffle([v], list(range(half))), T.Shuffle([v], list(range(half, lanes)))


# The helpers below bind shared subexpressions (T.bind emits a statement), so they are called
# where a statement may go; an unbound tree of halves would grow exponentially.


def hsum(v, lanes: int):
    """Sum of all lanes by halving (reassociated, unlike llvm.vector.reduce.fadd)."""
    while lanes > 1:
        low, high = halves(T.bind(v), lanes)
        v, lanes = low + high, lanes // 2
    return v


def hmax(v, lanes: int):
    """Max of all lanes: halving while the lane count is even, then lane by lane."""
    while lanes > 1 and lanes % 2 == 0:
        low, high = halves(T.bind(v), lanes)
        v, lanes = T.max(low, high), lanes // 2
    if lanes == 1:
        return v
    v = T.bind(v)
    top = T.Shuffle([v], [0])
    for lane in range(1, lanes):
        top = T.max(top, T.Shuffle([v], [lane]))
    return top


def madd_i16(a, b, lanes: int):
    """int16 x lanes . int16 x lanes -> int32 x lanes/2, adjacent products summed in pairs."""
    prod = T.bind(T.Cast(f"int32x{lanes}", a) * T.Cast(f"int32x{lanes}", b))
    even = T.Shuffle([prod], list(range(0, lanes, 2)))
    odd = T.Shuffle([prod], list(range(1, lanes, 2)))
    return even + odd


def dot_u8s8(acc, a, b):
    """acc (int32 x 16) + the sums of four u8 x s8 products per lane (a: 64 unsigned bytes,
    b: 64 signed bytes, both as int8 x 64): one `vpdpbusd`, so AVX512-VNNI hosts only
    (KernelConfig.int8_dot). No saturation: codes below 16 against |b| <= 127 cannot overflow."""
    return T.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", acc, a, b)


def nibble_bytes(words, lanes: int) -> list:
    """uint16 x lanes -> [low nibbles, high nibbles] of its bytes, each as int8 x 2 * lanes
    (unsigned values below 16, dot_u8s8's first operand): one mask, one shift and a mask."""
    packed = T.bind(T.reinterpret(f"uint32x{lanes // 2}", words))
    low = splat(tirx.const(0x0F0F0F0F, "uint32"), lanes // 2)
    four = splat(tirx.const(4, "uint32"), lanes // 2)
    as_bytes = f"int8x{2 * lanes}"
    return [T.reinterpret(as_bytes, packed & low), T.reinterpret(as_bytes, (packed >> four) & low)]


def prefetch(buffer, index) -> None:
    """Hint the cache line holding buffer[index] into L1 (a statement; never faults)."""
    i32 = lambda v: tirx.const(v, "int32")  # noqa: E731
    T.evaluate(
        T.call_llvm_intrin(
            "void", "llvm.prefetch.p0", T.address_of(buffer[index]), i32(0), i32(3), i32(1)
        )
    )


def concat(a, b, lanes: int):
    """Two vectors of `lanes` lanes each, one after the other."""
    return T.Shuffle([a, b], list(range(2 * lanes)))


def exp(x, lanes: int):
    """Vectorized float32 exp (LLVM would call scalar expf per lane)."""
    x = T.bind(T.max(T.min(x, splat(f32(EXP_MAX), lanes)), splat(f32(EXP_MIN), lanes)))
    n = T.bind(T.floor(x * splat(f32(LOG2E), lanes) + splat(f32(0.5), lanes)))
    r = T.bind(x - n * splat(f32(LN2_HI), lanes) - n * splat(f32(LN2_LO), lanes))
    p = splat(f32(EXP_POLY[0]), lanes)
    for c in EXP_POLY[1:]:
        p = p * r + splat(f32(c), lanes)
    p = p * r * r + r + splat(f32(1.0), lanes)
    bits = (T.Cast(f"int32x{lanes}", n) + splat(tirx.const(127, "int32"), lanes)) << splat(
        tirx.const(23, "int32"), lanes
    )
    return p * T.reinterpret(f"float32x{lanes}", bits)


def softcap(x, cap: float, lanes: int):
    """cap * tanh(x / cap), with tanh(y) = 1 - 2 / (exp(2y) + 1)."""
    twice = x * splat(f32(2.0 / cap), lanes)
    one = splat(f32(1.0), lanes)
    return (one - splat(f32(2.0), lanes) / (exp(twice, lanes) + one)) * splat(f32(cap), lanes)


def silu(x, lanes: int):
    x = T.bind(x)
    one = splat(f32(1.0), lanes)
    return x / (one + exp(-x, lanes))
