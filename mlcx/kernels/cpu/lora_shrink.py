"""The LoRA shrink on the CPU reading its input through a row source (mlcx.kernels.cpu.rows):
u[t, j] = row(t) . A[slot[t], j], where row(t) is the RMSNorm or SwiGLU of the graph computed
here from that op's own inputs. The base linear reading the same input then keeps the op as
its fused prologue (mlcx.passes.cpu.fuse_lora), instead of both reading a tensor that a
kernel of its own wrote first.

Tokens are shared out among the threads; each builds its token's row once into a scratch row,
then runs the adapter's A rows against it as LANES partial sums (A widened to float32 in
registers, as mlcx.kernels.lora's scheduled shrink does).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.linear_spec import split_range
from mlcx.kernels.cpu.rows import RowSource, float_row
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.kernels.lowering_marks import EXACT_BUFFERS

LANES = 16


@dataclass(frozen=True)
class ShrinkSpec:
    source: RowSource
    width: int  # rows of A per slot: the projection's parts times the rank
    slots: int
    weight_dtype: str
    threads: int

    def __post_init__(self) -> None:
        if self.source.features % CHUNK:
            raise ValueError(
                f"a LoRA shrink with a fused row source needs input features divisible by "
                f"{CHUNK}, not {self.source.features}"
            )

    @property
    def name(self) -> str:
        kind = type(self.source).__name__.removesuffix("Rows").lower()
        return f"lora_shrink_{kind}_{self.source.features}x{self.width}"


def _params(spec: ShrinkSpec) -> dict[str, tirx.Buffer]:
    tokens = tirx.Var("tokens", "int64")
    features = spec.source.features
    shapes = [
        *spec.source.inputs(tokens),
        ("a", (spec.slots, spec.width, features), spec.weight_dtype),
        ("rows", (tokens,), "int32"),
        ("u", (tokens, spec.width), "float32"),
    ]
    return {
        name: T.match_buffer(T.arg(name, T.handle()), shape, dtype) for name, shape, dtype in shapes
    }


def _dot(bufs, row: tirx.Buffer, acc: tirx.Buffer, slot, t, j, features: int) -> None:
    """u[t, j] = row . A[slot, j]."""
    lanes = vec.ramp(0, LANES)
    T.buffer_store(acc, vec.splat(vec.f32(0.0), LANES), [lanes])
    with T.serial(0, features // LANES) as k:
        w = vec.to_f32(bufs["a"][slot, j, vec.ramp(k * LANES, LANES)])
        T.buffer_store(acc, acc[lanes] + row[0, vec.ramp(k * LANES, LANES)] * w, [lanes])
    T.buffer_store(bufs["u"], vec.hsum(acc[lanes], LANES), [t, j])


def build_lora_shrink(spec: ShrinkSpec) -> tirx.PrimFunc:
    features = spec.source.features
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        bufs = _params(spec)
        tokens = bufs["rows"].shape[0]
        with T.parallel(0, spec.threads) as c:
            row = T.alloc_buffer((1, features), "float32")
            acc = T.alloc_buffer((LANES,), "float32")
            begin, end = split_range(tokens, spec.threads, c)
            with T.serial(begin, end) as t:
                float_row(spec.source, bufs, t, row, 0)
                slot = T.bind(bufs["rows"][t])
                with T.serial(0, spec.width) as j:
                    _dot(bufs, row, acc, slot, t, j, features)
    return ib.get()
