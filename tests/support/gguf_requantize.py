"""A GGUF file rewritten with other tensor types, as llama-quantize would store it: matrices in
the block types a mix names (gguf's own quantizer, or round-to-nearest K-quant codes laid out as
ggml lays them), everything else (norms, conv taps, decays) kept as it is; and a file's
tensors dequantized to F32 by the `gguf` package (the reference for the kept blocks)."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
from gguf import GGML_QUANT_SIZES
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize

from tests.support.tiny_gguf import _blocks


def _rewrite(src: Path, out: Path, convert) -> Path:
    """`src` with each tensor's (data, type) replaced by convert(name, tensor)."""
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(str(out), arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    for tensor in reader.tensors:
        data, gtype = convert(tensor)
        if gtype in (GT.F32, GT.F16):
            writer.add_tensor(tensor.name, data)
        else:
            writer.add_tensor(tensor.name, data, raw_dtype=gtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _float(tensor) -> np.ndarray:
    shape = tuple(int(d) for d in reversed(tensor.shape))
    data = dequantize(np.asarray(tensor.data), GT(tensor.tensor_type))
    return data.astype(np.float32).reshape(shape)


def requantize(src: Path, out: Path, mix: dict[str, GT]) -> Path:
    """Matrices whose name ends with a key of `mix` (the first that matches) in its type."""

    def convert(tensor):
        data = _float(tensor)
        gtype = next((t for suffix, t in mix.items() if tensor.name.endswith(suffix)), None)
        if gtype is None or data.ndim != 2 or data.shape[1] % GGML_QUANT_SIZES[gtype][0]:
            return np.asarray(tensor.data), GT(tensor.tensor_type)
        return _blocks(data, gtype), gtype

    return _rewrite(src, out, convert)


def dequantized(src: Path, out: Path) -> Path:
    """Every tensor of `src` as F32."""
    return _rewrite(src, out, lambda tensor: (_float(tensor), GT.F32))
