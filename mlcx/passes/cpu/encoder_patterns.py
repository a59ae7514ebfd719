"""What the image encoder's CPU rewrites (mlcx.passes.cpu.encoder_kernels, encoder_attention)
share: reading a matched expression's shape and axes, and adding each kernel to the module once
by name."""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm import relax


def static_shape(expr: relax.Expr, free: int | None = None) -> tuple | None:
    """The static float32 shape of expr; None otherwise. Dimension `free` may be symbolic (an
    image's patch count, as Qwen-VL's dynamic resolution makes it) and is kept as its PrimExpr."""
    info = expr.ty
    if not isinstance(info, relax.TensorType) or info.dtype != "float32" or info.shape is None:
        return None
    dims = list(info.shape.values)
    static = [isinstance(s, tvm.tirx.IntImm) for s in dims]
    if not all(known or i == free for i, known in enumerate(static)):
        return None
    return tuple(int(s) if known else s for s, known in zip(dims, static, strict=True))


def axes(call: relax.Call) -> list[int] | None:
    found = call.attrs.axes
    return None if found is None else [int(a) for a in found]


class Kernels:
    """PrimFuncs added to the module once per shape, by name."""

    def __init__(self, mod: tvm.IRModule):
        self.builder = relax.BlockBuilder(mod)
        self.added: dict[str, relax.GlobalVar] = {}

    def get(self, name: str, make: Callable[[], tvm.tirx.PrimFunc]) -> relax.GlobalVar:
        if name not in self.added:
            self.added[name] = self.builder.add_func(make(), name)
        return self.added[name]
