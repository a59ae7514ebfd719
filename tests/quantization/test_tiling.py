"""The row-tiled weight layout (the CPU artifacts' default) against the row-major one and
against GGUF's own dequantization: same values, only the byte order differs, and that order
is the one the module documents (checked here by reading bytes with plain loops)."""

from __future__ import annotations

import gguf.quants
import numpy as np
import pytest
import tvm
from gguf import GGMLQuantizationType as GT
from tvm import te

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.quantization.formats import format_from_name

TILED = [
    "int4-affine-g32-float16-t16",
    "int4-sym-g32-float32-t16",
    "int4-sym-g64-float16-t16",
    "int8-sym-g32-float16-t16",
]


def _weight(n=48, k=128, seed=0):
    return np.random.default_rng(seed).standard_normal((n, k)).astype(np.float32)


@pytest.mark.parametrize("name", TILED)
def test_tiled_keeps_values_shapes_and_name(name):
    fmt = format_from_name(name)
    assert fmt.tiled and fmt.name == name and not fmt.row_major.tiled
    tiled, plain = fmt.pack(_weight()), fmt.row_major.pack(_weight())
    for suffix in fmt.suffixes:
        assert tiled[suffix].shape == plain[suffix].shape
        assert tiled[suffix].dtype == plain[suffix].dtype
    assert not np.array_equal(tiled["qweight"], plain["qweight"])
    np.testing.assert_array_equal(fmt.unpack(tiled), fmt.row_major.unpack(plain))


def test_4bit_byte_order_is_the_documented_one():
    fmt = format_from_name("int4-affine-g32-float16-t16")
    n, k = 32, 64
    codes = np.random.default_rng(1).integers(0, 16, (n, k))
    scale = np.ones((n, k // 32), np.float32)
    words = fmt.from_ints(codes, scale, scale)["qweight"].reshape(-1).view(np.uint16)
    for row in range(n):
        for feature in range(k):
            band, r, chunk, f = row // 16, row % 16, feature // 32, feature % 32
            pair, e = f // 2, f % 2
            block = band * (k // 32) + chunk
            word = words[(block * 4 + pair // 4) * 32 + 2 * r + e]
            assert (int(word) >> (4 * (pair % 4))) & 15 == codes[row, feature]


def test_8bit_byte_order_is_the_documented_one():
    fmt = format_from_name("int8-sym-g32-float16-t16")
    n, k = 16, 64
    codes = np.random.default_rng(2).integers(0, 256, (n, k))
    stored = fmt.from_ints(codes, np.ones((n, k // 32), np.float32))["qweight"].reshape(-1)
    for row in range(n):
        for feature in range(k):
            r, chunk, f = row % 16, feature // 32, feature % 32
            byte = stored[(chunk * 16 + f // 2) * 32 + 2 * r + f % 2]
            assert int(byte) + 128 == codes[row, feature]


@pytest.mark.parametrize("gtype, name", [(GT.Q4_1, TILED[0]), (GT.Q8_0, TILED[3])])
def test_gguf_blocks_tiled_dequantize_like_gguf(gtype, name):
    raw = gguf.quants.quantize(_weight(32, 96, 3), gtype)
    planes = unpack_blocks(raw, gtype, format_from_name(name))
    want = gguf.quants.dequantize(raw, gtype)
    np.testing.assert_allclose(format_from_name(name).unpack(planes), want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", TILED)
def test_te_element_reads_the_tiled_bytes(name):
    """The embedding gather and TVM's own kernels read weights through `element`."""
    fmt, (n, k) = format_from_name(name), (48, 128)
    specs = fmt.param_specs(n, k)
    holders = {s: te.placeholder(specs[s][0], specs[s][1], name=s) for s in fmt.suffixes}
    out = te.compute((n, k), lambda i, j: fmt.element(holders, i, j, "float32"))
    func = te.create_prim_func([holders[s] for s in fmt.suffixes] + [out])
    lib = tvm.compile(tvm.IRModule({"main": func}), "llvm")
    planes = fmt.pack(_weight(n, k))
    got = tvm.runtime.empty((n, k), "float32")
    lib["main"](*[tvm.runtime.tensor(planes[s]) for s in fmt.suffixes], got)
    np.testing.assert_array_equal(got.numpy(), fmt.unpack(planes))


def test_untileable_shapes_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="divisible by 16"):
        format_from_name(TILED[0]).pack(_weight(40, 64))
