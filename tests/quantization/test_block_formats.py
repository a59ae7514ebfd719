"""The 5-bit and K-quant formats against the `gguf` package's dequantization.

Blocks are random bytes (every bit pattern of a block is a valid block; only the f16 scales
are kept finite), so every field of ggml's layout is exercised: decoding them into mlcx's
planes and packing those back gives the same bytes, in the row-major and the row-tiled
layout, and the weights mlcx computes (numpy, and the TE element the generic kernels use)
equal gguf's dequantization bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from gguf import GGML_QUANT_SIZES
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize
from tvm import te

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.ggml_blocks import KIND_OF, decode_blocks, encode_blocks
from mlcx.quantization.schemes import GGUF_FORMATS
from mlcx.quantization.stacked import StackedFormat

TYPES = list(KIND_OF)


def random_blocks(gtype: GT, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights, size = GGML_QUANT_SIZES[gtype]
    raw = rng.integers(0, 256, (rows, cols // weights * size), dtype=np.uint8)
    codes, planes = decode_blocks(raw, gtype, "w")
    for value in planes.values():
        if value.dtype == np.float16:
            value[...] = rng.uniform(-0.02, 0.02, value.shape).astype(np.float16)
    return encode_blocks(codes, planes, gtype)


@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("gtype", TYPES)
def test_blocks_decode_pack_and_dequantize_as_gguf_does(gtype, tiled):
    raw = random_blocks(gtype, 32, 512)
    fmt = BlockFormat(KIND_OF[gtype], tiled)
    params = unpack_blocks(raw, gtype, fmt, "w")
    assert {k: (v.shape, str(v.dtype)) for k, v in params.items()} == {
        k: (shape, dtype) for k, (shape, dtype) in fmt.param_specs(32, 512).items()
    }
    np.testing.assert_array_equal(encode_blocks(*fmt.parts(params), gtype), raw)
    want = dequantize(raw, gtype).reshape(32, 512)
    np.testing.assert_array_equal(fmt.unpack(params), want)


@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("gtype", TYPES)
def test_te_element_computes_gguf_weights(gtype, tiled):
    raw = random_blocks(gtype, 16, 256, seed=3)
    fmt = BlockFormat(KIND_OF[gtype], tiled)
    params = unpack_blocks(raw, gtype, fmt, "w")
    specs = fmt.param_specs(16, 256)
    holders = {s: te.placeholder(shape, dtype, s) for s, (shape, dtype) in specs.items()}
    out = te.compute((16, 256), lambda n, k: fmt.element(holders, n, k, "float32"))
    func = te.create_prim_func([*holders.values(), out])
    lib = tvm.compile(tvm.IRModule({"main": func}), "llvm")
    result = tvm.runtime.empty((16, 256), "float32")
    lib["main"](*[tvm.runtime.tensor(params[s]) for s in holders], result)
    np.testing.assert_array_equal(result.numpy(), dequantize(raw, gtype).reshape(16, 256))


@pytest.mark.parametrize("gtype", TYPES)
def test_round_to_nearest_pack_stays_close(gtype):
    w = np.random.default_rng(1).standard_normal((16, 512)).astype(np.float32) * 0.05
    fmt = GGUF_FORMATS[gtype]
    err = np.abs(fmt.unpack(fmt.pack(w)) - w).max() / np.abs(w).max()
    assert err < {2: 0.35, 3: 0.2, 4: 0.08, 5: 0.04, 6: 0.02}[fmt.bits]


def test_a_malformed_block_row_names_the_tensor():
    raw = np.zeros((4, 143), np.uint8)
    with pytest.raises(ValueError, match="blk.0.ffn_down.weight: Q4_K rows must be whole 144"):
        decode_blocks(raw, GT.Q4_K, "blk.0.ffn_down.weight")


def test_names_round_trip():
    for fmt in [BlockFormat("q6_k"), BlockFormat("q4_k", tiled=True), BlockFormat("q5_0")]:
        assert format_from_name(fmt.name) == fmt
    stack = StackedFormat(((64, BlockFormat("q4_k", True)), (32, GGUF_FORMATS[GT.Q8_0])))
    assert format_from_name(stack.name) == stack
    assert stack.row_major.parts[0][1] == BlockFormat("q4_k")
    with pytest.raises(ValueError, match="not a weight format name"):
        format_from_name("q4_k-t8")
