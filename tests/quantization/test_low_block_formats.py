"""Q2_K, Q3_K, IQ4_NL and IQ4_XS kept as blocks, at their extremes, against `gguf`.

The random-block round trips of test_block_formats.py cover these types too; here every code
value and the ends of every scale field appear on purpose (sub-block scales 0 and the
largest, signed ones at -32 and 31, Q2_K's scale and minimum nibbles 0 and 15, f16 super
scales from subnormal to large), so a field read one bit off cannot pass by luck.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.ggml_blocks import KIND_OF, decode_blocks, encode_blocks
from mlcx.quantization.schemes import GGUF_FORMATS, Role, get_quantization
from tests.quantization.test_block_formats import random_blocks

LOW = [GT.Q2_K, GT.Q3_K, GT.IQ4_NL, GT.IQ4_XS]
D_VALUES = np.array([6e-8, -3e-5, 0.0, 1.0, -7.5, 1024.0], np.float16)  # subnormal .. large


def _extreme(values: np.ndarray, low: int, high: int, rng) -> np.ndarray:
    """`values`' shape: the two ends alternating with random values in between."""
    flat = rng.integers(low, high + 1, values.size)
    flat[0::3], flat[1::3] = low, high
    return flat.reshape(values.shape).astype(values.dtype)


def extreme_blocks(gtype: GT, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    codes, planes = decode_blocks(random_blocks(gtype, rows, cols, seed), gtype, "w")
    codes = (np.arange(codes.size) % (1 << BlockFormat(KIND_OF[gtype]).bits)).reshape(codes.shape)
    for name, value in planes.items():
        if value.dtype == np.float16:
            value[...] = D_VALUES[rng.integers(0, len(D_VALUES), value.shape)]
        elif name == "sc":
            value[...] = _extreme(value, -32, 31, rng)
        else:  # Q2_K's scale | minimum << 4
            value[...] = _extreme(value, 0, 255, rng)
            value[0, :2] = [0x0F, 0xF0]
    return encode_blocks(codes, planes, gtype)


@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("gtype", LOW)
def test_extreme_blocks_round_trip_and_dequantize_as_gguf_does(gtype, tiled):
    raw = extreme_blocks(gtype, 16, 512)
    fmt = BlockFormat(KIND_OF[gtype], tiled)
    params = unpack_blocks(raw, gtype, fmt, "w")
    codes, _ = fmt.parts(params)
    assert set(np.unique(codes)) == set(range(1 << fmt.bits))
    np.testing.assert_array_equal(encode_blocks(*fmt.parts(params), gtype), raw)
    np.testing.assert_array_equal(fmt.unpack(params), dequantize(raw, gtype).reshape(16, 512))


@pytest.mark.parametrize("gtype", LOW)
def test_kept_formats_store_about_the_files_bytes(gtype):
    """Only Q3_K's and IQ4_XS's 6-bit scales grow (to a byte): within 4% of the file."""
    fmt = GGUF_FORMATS[gtype]
    raw = random_blocks(gtype, 16, 512)
    stored = sum(a.nbytes for a in unpack_blocks(raw, gtype, fmt, "w").values())
    assert raw.nbytes <= stored <= 1.04 * raw.nbytes


@pytest.mark.parametrize("gtype", LOW)
def test_pack_writes_blocks_gguf_reads_back(gtype):
    """BlockFormat.pack (round to nearest) gives planes whose file blocks gguf dequantizes to
    what the format computes, close to the weights."""
    w = np.random.default_rng(4).standard_normal((16, 512)).astype(np.float32) * 0.05
    fmt = GGUF_FORMATS[gtype]
    params = fmt.pack(w)
    raw = encode_blocks(*fmt.parts(params), gtype)
    np.testing.assert_array_equal(dequantize(raw, gtype).reshape(16, 512), fmt.unpack(params))
    rms = np.sqrt(((fmt.unpack(params) - w) ** 2).mean()) / w.std()
    assert rms < {2: 0.4, 3: 0.25, 4: 0.1}[fmt.bits]


def test_the_gguf_scheme_keeps_them_and_names_round_trip():
    quant = get_quantization("gguf")
    for gtype in LOW:
        fmt = GGUF_FORMATS[gtype]
        assert quant.format_for(Role.LINEAR, (64, 512), gtype) == fmt
        for tiled in (False, True):
            named = BlockFormat(fmt.kind, tiled)
            assert format_from_name(named.name) == named
    with pytest.raises(ValueError, match="IQ4_NL rows must be whole 18-byte blocks"):
        decode_blocks(np.zeros((2, 35), np.uint8), GT.IQ4_NL, "blk.0.attn_q.weight")
