"""Turning a source's tensors into the arrays of each weight's storage format."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.errors import ModelSourceError
from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.frontends.tensors import SourceTensor, TensorSource
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.formats import DenseFormat, GroupIntFormat, WeightFormat
from mlcx.quantization.schemes import GGUF_FLOAT_TYPES, GGUF_FORMATS, Quantization, Role

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


def _common_type(spec: WeightSpec, tensors: list[SourceTensor]) -> GT | None:
    types = {t.gguf_type for t in tensors}
    if len(types) == 1:
        return types.pop()
    log.warning(
        "%s: source tensors mix GGUF types %s; dequantized to float at import",
        spec.target,
        sorted(t.name for t in types if t is not None),
    )
    return None


# A target's choice of layout for a planned format and the weight's [N, K] shape.
Layout = Callable[[WeightFormat, tuple[int, ...]], WeightFormat]


def plan_formats(
    specs: list[WeightSpec], source: TensorSource, quant: Quantization, layout: Layout | None = None
) -> dict[str, WeightFormat]:
    """The storage format of every matrix weight, keyed by WeightSpec.target."""
    formats: dict[str, WeightFormat] = {}
    for spec in specs:
        if spec.role is Role.VECTOR:
            continue
        tensors = [source.get(name) for name in spec.sources]
        shape = _shape(tensors)
        fmt = quant.format_for(spec.role, shape, _common_type(spec, tensors))
        formats[spec.target] = layout(fmt, shape) if layout else fmt
    return formats


def _rows(spec: WeightSpec, tensors: list[SourceTensor], raw: bool) -> np.ndarray:
    parts = []
    for i, tensor in enumerate(tensors):
        data = tensor.load() if raw else tensor.to_float()
        transform = spec.transform(i)
        parts.append(transform(data) if transform else data)
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def _warn_lossy(spec: WeightSpec, gtype: GT | None, fmt: WeightFormat) -> None:
    if gtype is None or gtype in GGUF_FLOAT_TYPES:
        return
    if gtype not in GGUF_FORMATS:
        log.warning(
            "%s: GGUF type %s is dequantized to %s at import (mlcx keeps Q4_0, Q4_1, "
            "Q8_0, F16 and F32 tensors as they are)",
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


def convert_weight(
    spec: WeightSpec, source: TensorSource, fmt: WeightFormat | None, act_dtype: str
) -> dict[str, np.ndarray]:
    """The named parameter arrays for one WeightSpec."""
    tensors = [source.get(name) for name in spec.sources]
    gtype = tensors[0].gguf_type if len({t.gguf_type for t in tensors}) == 1 else None
    if spec.role is Role.VECTOR:
        return {spec.target: _rows(spec, tensors, raw=False).astype(act_dtype)}
    if fmt is None:
        raise ValueError(f"no weight format planned for {spec.target}")
    if (
        isinstance(fmt, GroupIntFormat)
        and gtype is not None
        and GGUF_FORMATS.get(gtype) == fmt.row_major
    ):
        params = unpack_blocks(_rows(spec, tensors, raw=True), gtype, fmt)
    else:
        _warn_lossy(spec, gtype, fmt)
        params = fmt.pack(_rows(spec, tensors, raw=False))
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
