"""Which hand-written kernel builds a linear layer, by weight format (a registry)."""

from __future__ import annotations

from collections.abc import Callable

from tvm import tirx

from mlcx.kernels.cpu import flinear, qlinear, qtiled, tiled_reader, weights
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.weights import CHUNK

Builder = Callable[[LinearSpec, KernelConfig], tirx.PrimFunc]


def _quantized(fmt, cfg: KernelConfig) -> bool:
    return cfg.linear_kernels.integer and weights.supports(fmt)


def _tiled(fmt, cfg: KernelConfig) -> bool:
    return cfg.linear_kernels.integer and tiled_reader.supports(fmt)


def _float(fmt, cfg: KernelConfig) -> bool:
    return flinear.supports(fmt)


# (accepts the weight format under this config?, builder); the first match builds the kernel.
BUILDERS: list[tuple[Callable[[object, KernelConfig], bool], Builder]] = [
    (_tiled, qtiled.build_tiled_linear),
    (_quantized, qlinear.build_quantized_linear),
    (_float, flinear.build_float_linear),
]


def _builder(spec: LinearSpec, cfg: KernelConfig) -> Builder | None:
    # only the float kernel reads input rows of a width not a multiple of the chunk
    ragged_ok = flinear.supports(spec.fmt) and flinear.takes_features(spec)
    if spec.in_features % CHUNK and not ragged_ok:
        return None
    return next((build for accepts, build in BUILDERS if accepts(spec.fmt, cfg)), None)


def can_build(spec: LinearSpec, cfg: KernelConfig) -> bool:
    return _builder(spec, cfg) is not None


def build_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    build = _builder(spec, cfg)
    if build is None:
        raise ValueError(f"no CPU kernel for {spec.fmt.name} with {spec.in_features} inputs")
    return build(spec, cfg)
