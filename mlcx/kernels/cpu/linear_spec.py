"""One fused linear kernel to build: its input rows, weight format, output and epilogue."""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu.rows import RowSource
from mlcx.quantization.formats import WeightFormat


@dataclass(frozen=True)
class LinearSpec:
    """y [tokens, out_features] = rows(inputs) @ W.T (+ residual), float32 activations.

    Parameters, in order: the row source's inputs, the weight planes in `fmt.suffixes`
    order, the residual [tokens, out_features] if any, then the output.
    """

    source: RowSource
    fmt: WeightFormat
    out_features: int
    residual: bool = False

    def __post_init__(self) -> None:
        if self.out_features < 1:
            raise ValueError(f"out_features must be positive, not {self.out_features}")

    @property
    def in_features(self) -> int:
        return self.source.features

    @property
    def name(self) -> str:
        kind = type(self.source).__name__.replace("Rows", "").lower()
        res = "_residual" if self.residual else ""
        fmt = self.fmt.name.replace("-", "_")
        return f"cpu_linear_{kind}_{fmt}_{self.in_features}x{self.out_features}{res}"


def declare_params(spec: LinearSpec) -> tuple[tirx.Var, dict[str, tirx.Buffer]]:
    """Emit the kernel's parameters (inside a T.prim_func frame): (tokens, buffers by name)."""
    tokens = tirx.Var("tokens", "int64")
    bufs: dict[str, tirx.Buffer] = {}

    def param(name: str, shape, dtype: str) -> None:
        handle = T.arg(name, T.handle())
        bufs[name] = T.match_buffer(handle, shape, dtype)

    for name, shape, dtype in spec.source.inputs(tokens):
        param(name, shape, dtype)
    for suffix, (shape, dtype) in spec.fmt.param_specs(spec.out_features, spec.in_features).items():
        param(suffix, shape, dtype)
    if spec.residual:
        param("residual", (tokens, spec.out_features), "float32")
    param("out", (tokens, spec.out_features), "float32")
    return tokens, bufs


def divisor(n: int, preferred: int) -> int:
    """The largest divisor of n not above `preferred`."""
    return next(r for r in range(min(preferred, n), 0, -1) if n % r == 0)


def split_range(count, threads: int, c):
    """Range of chunk c when `count` items are cut into `threads` contiguous chunks."""
    per = (count + threads - 1) // threads
    return c * per, T.min((c + 1) * per, count)


def store_out(spec: LinearSpec, bufs, t, index, value) -> None:
    if spec.residual:
        value = value + bufs["residual"][t, index]
    T.buffer_store(bufs["out"], value, [t, index])


def token_blocks(step: int, tokens, run, exact_tail: bool = False) -> None:
    """run(t0, size) over all tokens with static sizes: blocks of `step` tokens, then the rest
    as one block of its exact size (`exact_tail`: one pass over the weights, more code) or as
    blocks of halving sizes (4, 2, 1 after 8)."""
    with T.serial(0, tokens // step) as tb:
        run(tb * step, step)
    start, rem = tokens // step * step, tokens % step
    sizes = range(step - 1, 0, -1) if exact_tail else [1 << b for b in range(step.bit_length())]
    for size in sizes:
        if size >= step:
            continue
        if exact_tail:
            with T.If(rem == size), T.Then():
                run(start, size)
        else:
            with T.If(rem // size % 2 == 1), T.Then():
                run(start + rem // (2 * size) * (2 * size), size)
