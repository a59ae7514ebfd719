"""MXFP4 against the `gguf` package (dequantize and quantize), transformers' gpt-oss MXFP4
dequantization and llama.cpp's HF -> GGUF converter.

GGUF blocks are random bytes with every E8M0 exponent 0..255 and every code, so every field is
exercised: decoding them into mlcx's planes and packing those back gives the file's bytes (both
layouts), and the weights mlcx computes (numpy and the TE element) equal gguf's bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize, quantize
from tvm import te

from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.mxfp4 import MXFP4, Mxfp4Format
from mlcx.quantization.schemes import GGUF_FORMATS, Role, get_quantization
from tests.support.mxfp4_reference import (
    hf_to_ggml_bytes,
    llama_cpp_nibble_transform,
    random_ggml,
    random_hf,
)

LAYOUTS = [Mxfp4Format(False), Mxfp4Format(True)]
# exponents 254 and 255 times code 12 overflow float32 to Inf, in gguf as in mlcx
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


@pytest.mark.parametrize("fmt", LAYOUTS, ids=lambda f: f.name)
def test_every_exponent_and_code_round_trips_and_dequantizes_as_gguf(fmt):
    raw = random_ggml(32, 256, seed=1, exponents=np.arange(256))  # 256 blocks: every exponent
    codes, exponents = mb.ggml_to_parts(raw)
    assert set(np.unique(exponents)) == set(range(256)) and set(np.unique(codes)) == set(range(16))
    params = mb.from_ggml(raw, fmt)
    specs = fmt.param_specs(32, 256)
    assert {k: (v.shape, str(v.dtype)) for k, v in params.items()} == specs
    np.testing.assert_array_equal(mb.to_ggml(params, fmt), raw)
    want = dequantize(raw, GT.MXFP4).reshape(32, 256)
    np.testing.assert_array_equal(fmt.unpack(params), want)
    assert sum(p.nbytes for p in params.values()) == raw.nbytes  # 17 bytes per 32 weights


@pytest.mark.parametrize("fmt", LAYOUTS, ids=lambda f: f.name)
def test_te_element_computes_gguf_weights(fmt):
    raw = random_ggml(16, 512, seed=2, exponents=np.arange(256))
    params = mb.from_ggml(raw, fmt)
    holders = {
        name: te.placeholder(shape, dtype, name=name)
        for name, (shape, dtype) in fmt.param_specs(16, 512).items()
    }
    out = te.compute((16, 512), lambda n, k: fmt.element(holders, n, k, "float32"), name="w")
    func = te.create_prim_func([*holders.values(), out])
    lib = tvm.compile(tvm.IRModule({"main": func}), "llvm")
    result = tvm.runtime.empty((16, 512), "float32")
    lib["main"](*[tvm.runtime.tensor(params[s]) for s in fmt.suffixes], result)
    np.testing.assert_array_equal(result.numpy(), dequantize(raw, GT.MXFP4).reshape(16, 512))


def test_pack_gives_gguf_quantizer_bytes():
    rng = np.random.default_rng(3)
    scale = 2.0 ** rng.integers(-10, 6, (64, 8, 1))
    weight = (rng.standard_normal((64, 8, 32)) * scale).astype(np.float32).reshape(64, 256)
    weight[0, :32] = 0.0  # an all-zero block
    for fmt in LAYOUTS:
        np.testing.assert_array_equal(mb.to_ggml(fmt.pack(weight), fmt), quantize(weight, GT.MXFP4))


def test_hf_blocks_and_scales_give_the_gguf_planes_and_transformers_weights():
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    blocks, scales = random_hf((3,), 16, 128, seed=4)  # 3 experts of [16, 128]
    params = mb.hf_planes(blocks, scales)
    dense = convert_moe_packed_tensors(
        torch.from_numpy(blocks), torch.from_numpy(scales), dtype=torch.float32
    )  # [experts, in, out], as GptOssExperts holds it
    want = dense.transpose(1, 2).reshape(48, 128).numpy()
    np.testing.assert_array_equal(MXFP4.unpack(params), want)
    transform = llama_cpp_nibble_transform()
    if transform is None:
        pytest.skip("llama.cpp's converter is not on this machine")
    raw = hf_to_ggml_bytes(blocks, scales, transform)
    for fmt in LAYOUTS:
        hf, gguf = mb.hf_planes(blocks, scales, fmt), mb.from_ggml(raw, fmt)
        for name in fmt.suffixes:
            np.testing.assert_array_equal(hf[name], gguf[name])


def test_gate_up_rows_and_bias_are_deinterleaved_gate_first():
    blocks, scales = random_hf((2,), 8, 64, seed=5)  # 2 experts, 2I = 8 interleaved rows
    bias = np.random.default_rng(6).standard_normal((2, 8)).astype(np.float32)
    stacked = MXFP4.unpack(mb.hf_gate_up_planes(blocks, scales))  # [2 * 2 * 4, 64]
    rows = MXFP4.unpack(mb.hf_planes(blocks, scales)).reshape(2, 8, 64)
    np.testing.assert_array_equal(stacked[:8].reshape(2, 4, 64), rows[:, 0::2])  # gate rows
    np.testing.assert_array_equal(stacked[8:].reshape(2, 4, 64), rows[:, 1::2])  # up rows
    stacked_bias = mb.hf_gate_up_bias(bias)
    np.testing.assert_array_equal(
        stacked_bias, np.concatenate([bias[:, 0::2], bias[:, 1::2]]).ravel()
    )


def test_registered_as_the_kept_format_of_gguf_mxfp4():
    """Kept by every scheme: `-q q4f16` quantizes the rest of a gpt-oss, not its experts."""
    assert GGUF_FORMATS[GT.MXFP4] == MXFP4
    for scheme in ("gguf", "gguf-f16", "q4f16", "q8f32", "q0f32"):
        assert get_quantization(scheme).format_for(Role.LINEAR, (64, 256), GT.MXFP4) == MXFP4


def test_names_parse_and_bad_input_is_refused():
    for fmt in LAYOUTS:
        assert format_from_name(fmt.name) == fmt
    with pytest.raises(ValueError, match="divisible by 32"):
        MXFP4.param_specs(16, 48)
    with pytest.raises(ValueError, match="17-byte blocks"):
        mb.ggml_to_parts(np.zeros((2, 20), np.uint8))
    with pytest.raises(ValueError, match=r"\[\.\.\., rows, K/32, 16\]"):
        mb.hf_planes(np.zeros((4, 2, 8), np.uint8), np.zeros((4, 2), np.uint8))
    with pytest.raises(ValueError, match="2 \\* width"):
        mb.hf_gate_up_bias(np.zeros((2, 7)))
