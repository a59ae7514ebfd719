"""Which byte layout a CPU artifact stores each weight in: row-tiled where mlcx's int16
kernels read it (mlcx.quantization.tiling), row-major everywhere else."""

from __future__ import annotations

from dataclasses import replace

from mlcx.kernels.cpu import tiled_reader
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import GroupIntFormat, WeightFormat
from mlcx.quantization.mxfp4 import Mxfp4Format
from mlcx.quantization.tiling import CHUNK, TILE_ROWS


def _tiled(fmt: WeightFormat, shape: tuple[int, ...]) -> WeightFormat:
    if (
        not isinstance(fmt, GroupIntFormat | BlockFormat | Mxfp4Format)
        or shape[0] % TILE_ROWS
        or shape[1] % CHUNK
    ):
        return fmt
    tiled = replace(fmt, tiled=True)
    return tiled if tiled_reader.supports(tiled) else fmt


def cpu_weight_layout(kernels: LinearKernels | None):
    """The layout function for plan_formats; None (row-major) unless the int16 kernels run:
    TVM's own kernels and the float fallback read row-major weights."""
    return _tiled if kernels is not None and kernels.integer else None
