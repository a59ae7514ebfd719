"""Turning a source's tensors into the arrays of each weight's storage format."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import numpy as np
from gguf import GGML_QUANT_SIZES
from gguf import GGMLQuantizationType as GT

from mlcx.errors import ModelSourceError
from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.frontends.tensors import SourceTensor, TensorSource
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import DenseFormat, GroupIntFormat, WeightFormat
from mlcx.quantization.mxfp4 import Mxfp4Format
from mlcx.quantization.schemes import GGUF_FLOAT_TYPES, GGUF_FORMATS, Quantization, Role
from mlcx.quantization.stacked import StackedFormat

log = logging.getLogger(__name__)


def _shape(tensors: list[SourceTensor]) -> tuple[int, ...]:
    first = tensors[0].shape
    for t in tensors[1:]:
        if t.shape[1:] != first[1:]:
            raise ModelSourceError(
                f"cannot stack {tensors[0].name} {first} with {t.name} {t.shape}: "
                "their column counts differ"
            )
    return (sum(t.shape[0] for t in tensors), *first[1:])


def _stacked(spec: WeightSpec, tensors: list[SourceTensor], quant: Quantization, cols: int):
    """A fused weight whose sources have different GGUF types: each run of sources of one type
    in that type's kept format (a StackedFormat), or None where no part would keep its blocks."""
    parts: list[tuple[int, WeightFormat]] = []
    for tensor in tensors:
        fmt = quant.format_for(spec.role, (tensor.shape[0], cols), tensor.gguf_type)
        if parts and parts[-1][1] == fmt:
            parts[-1] = (parts[-1][0] + tensor.shape[0], fmt)
        else:
            parts.append((tensor.shape[0], fmt))
    if len(parts) < 2 or all(isinstance(f, DenseFormat) for _, f in parts):
        return None
    return StackedFormat(tuple(parts))


# A target's choice of layout for a planned format and the weight's [N, K] shape.
Layout = Callable[[WeightFormat, tuple[int, ...]], WeightFormat]


def _apply_layout(fmt: WeightFormat, shape: tuple[int, ...], layout: Layout | None):
    if layout is None:
        return fmt
    if isinstance(fmt, StackedFormat):
        return StackedFormat(tuple((r, layout(f, (r, shape[1]))) for r, f in fmt.parts))
    return layout(fmt, shape)


def plan_formats(
    specs: list[WeightSpec], source: TensorSource, quant: Quantization, layout: Layout | None = None
) -> dict[str, WeightFormat]:
    """The storage format of every matrix weight, keyed by WeightSpec.target. A fused weight
    whose sources mix GGUF types keeps each source's format (StackedFormat) when the scheme
    keeps the file's formats; otherwise it is dequantized, with a warning."""
    formats: dict[str, WeightFormat] = {}
    for spec in specs:
        if spec.role is Role.VECTOR:
            continue
        tensors = [source.get(name) for name in spec.sources]
        shape = _shape(tensors)
        types = {t.gguf_type for t in tensors}
        fmt = None
        if len(types) > 1 and quant.keeps_source_formats and len(shape) == 2:
            fmt = _stacked(spec, tensors, quant, shape[1])
        if fmt is None:
            if len(types) > 1:
                log.warning(
                    "%s: source tensors mix GGUF types %s; dequantized to float at import",
                    spec.target,
                    sorted(t.name for t in types if t is not None),
                )
            fmt = quant.format_for(spec.role, shape, types.pop() if len(types) == 1 else None)
        formats[spec.target] = _apply_layout(fmt, shape, layout)
    return formats


def _rows(spec: WeightSpec, tensors: list[SourceTensor], raw: bool, first: int = 0) -> np.ndarray:
    """The rows of `tensors` (sources first, first + 1, ... of spec), transformed, stacked."""
    parts = []
    for i, tensor in enumerate(tensors):
        data = tensor.load() if raw else tensor.to_float()
        if raw and tensor.gguf_type in GGUF_FORMATS:
            _check_blocks(tensor, data)
        transform = spec.transform(first + i)
        parts.append(transform(data) if transform else data)
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def _check_blocks(tensor: SourceTensor, data: np.ndarray) -> None:
    weights, size = GGML_QUANT_SIZES[tensor.gguf_type]
    rows, cols = tensor.shape if len(tensor.shape) == 2 else (1, tensor.shape[0])
    if cols % weights or data.shape != (rows, cols // weights * size):
        raise ModelSourceError(
            f"{tensor.name}: {tensor.gguf_type.name} data of shape {data.shape} does not hold "
            f"{rows} x {cols} weights in {weights}-weight blocks of {size} bytes"
        )


def _warn_lossy(spec: WeightSpec, gtype: GT | None, fmt: WeightFormat) -> None:
    if gtype is None or gtype in GGUF_FLOAT_TYPES:
        return
    kept = ", ".join(t.name for t in GGUF_FORMATS)
    if gtype not in GGUF_FORMATS:
        log.warning(
            "%s: GGUF type %s is dequantized to %s at import (mlcx keeps %s, F16 and F32 "
            "tensors as they are)",
            spec.target,
            gtype.name,
            fmt.name,
            kept,
        )
    elif isinstance(fmt, DenseFormat):
        log.info(
            "%s: GGUF %s dequantized to %s (exact, 4-8x the bytes)",
            spec.target,
            gtype.name,
            fmt.name,
        )
    else:
        log.warning(
            "%s: GGUF %s re-quantized to %s (lossy; use --quantization gguf to keep "
            "the file's blocks)",
            spec.target,
            gtype.name,
            fmt.name,
        )


def _keeps_blocks(gtype: GT | None, fmt: WeightFormat) -> bool:
    """Whether `fmt` is the format that stores GGUF type gtype's blocks as they are."""
    kept = GGUF_FORMATS.get(gtype) if gtype is not None else None
    return isinstance(fmt, GroupIntFormat | BlockFormat | Mxfp4Format) and kept == fmt.row_major


def _convert(spec, tensors, fmt: WeightFormat, first: int = 0) -> dict[str, np.ndarray]:
    """The planes of `fmt` for the rows of `tensors` (spec's sources first, first + 1, ...)."""
    gtype = tensors[0].gguf_type if len({t.gguf_type for t in tensors}) == 1 else None
    if _keeps_blocks(gtype, fmt):
        return unpack_blocks(_rows(spec, tensors, True, first), gtype, fmt, tensors[0].name)
    _warn_lossy(spec, gtype, fmt)
    return fmt.pack(_rows(spec, tensors, False, first))


def _convert_stacked(spec, tensors, fmt: StackedFormat) -> dict[str, np.ndarray]:
    params, first = {}, 0
    for i, (rows, part) in enumerate(fmt.parts):
        count, covered = 0, 0
        while covered < rows:
            covered += tensors[first + count].shape[0]
            count += 1
        if covered != rows:
            raise ValueError(f"{spec.target}: stacked part {i} does not end at a source tensor")
        converted = _convert(spec, tensors[first : first + count], part, first)
        params.update({f"p{i}_{suffix}": array for suffix, array in converted.items()})
        first += count
    return params


def convert_weight(
    spec: WeightSpec, source: TensorSource, fmt: WeightFormat | None, act_dtype: str
) -> dict[str, np.ndarray]:
    """The named parameter arrays for one WeightSpec."""
    tensors = [source.get(name) for name in spec.sources]
    if spec.role is Role.VECTOR:
        return {spec.target: _rows(spec, tensors, raw=False).astype(act_dtype)}
    if fmt is None:
        raise ValueError(f"no weight format planned for {spec.target}")
    if isinstance(fmt, StackedFormat):
        params = _convert_stacked(spec, tensors, fmt)
    else:
        params = _convert(spec, tensors, fmt)
    return {f"{spec.target}.{suffix}": array for suffix, array in params.items()}


def iter_params(
    specs: list[WeightSpec],
    source: TensorSource,
    formats: dict[str, WeightFormat],
    act_dtype: str,
    order: list[str],
) -> Iterator[tuple[str, np.ndarray]]:
    """Yield (name, array) in `order` (the compiled functions' parameter order).

    A spec's arrays are adjacent in that order, so at most one spec is held in memory.
    """
    owner = {}
    for spec in specs:
        fmt = formats.get(spec.target)
        suffixes = (fmt or DenseFormat(act_dtype)).suffixes
        names = (
            [spec.target]
            if spec.role is Role.VECTOR
            else [f"{spec.target}.{suffix}" for suffix in suffixes]
        )
        owner.update({name: spec for name in names})
    pending: dict[str, np.ndarray] = {}
    for name in order:
        if name not in pending:
            if name not in owner:
                raise ValueError(f"model parameter {name} has no source tensor mapping")
            spec = owner[name]
            pending.update(convert_weight(spec, source, formats.get(spec.target), act_dtype))
        yield name, pending.pop(name)
