"""Hybrid models in mlcx's quantized formats; the conv taps and the delta rule's parameters
stay float in every one.

- GGUF blocks kept: a tiny Qwen3.5 at K-quant shapes as llama.cpp's converter writes it, its
  matrices rewritten in a Q4_K_M-like mix (Q4_K, Q6_K, Q5_0, Q8_0 and Q4_0; the Gated DeltaNet's
  q|k|v, z, b and a rows a stack of two block types) against the same file dequantized to F32 by
  the `gguf` package (the float linear kernels: the blocks read exactly);
- group formats from a Hugging Face folder (q4f32 on cpu): the tiny LFM2 against its q0f32
  artifact carrying the q4 weights unpacked in numpy;
each within 1e-4 over a prompt in three prefill steps and 8 decode steps (float linear kernels);
- q4f16 with the default kernels within 1% of the logits' scale of q4f32 (f16's rounding).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import ShardWriter, load_arrays
from mlcx.compile.model import CompileRequest
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.quantization.formats import format_from_name
from mlcx.targets.base import BuildOptions
from tests.support.compile_cache import compile_model
from tests.support.gguf_requantize import dequantized, requantize
from tests.support.harness import Harness
from tests.support.hybrid_models import CHUNK, PROMPT, QWEN35_K, compiled_hybrid, sharpened
from tests.support.llamacpp_convert import convert
from tests.support.tiny_models import make_tiny_model

TOL = 1e-4
# suffix -> type, the first match wins (llama-quantize's Q4_K_M in miniature)
MIX = {
    "attn_qkv.weight": GT.Q4_K,
    "attn_gate.weight": GT.Q4_K,
    "ssm_beta.weight": GT.Q8_0,
    "ssm_alpha.weight": GT.Q8_0,
    "ssm_out.weight": GT.Q6_K,
    "attn_q.weight": GT.Q4_K,
    "attn_k.weight": GT.Q4_K,
    "attn_v.weight": GT.Q6_K,
    "attn_output.weight": GT.Q5_0,
    "ffn_gate.weight": GT.Q4_0,
    "ffn_up.weight": GT.Q4_K,
    "ffn_down.weight": GT.Q6_K,
    "token_embd.weight": GT.Q8_0,
    "output.weight": GT.Q6_K,
}
STATE_PARAMS = ("conv_weight", "dt_bias", ".a", "norm_weight")


def _same_logits(want_art: Path, got_art: Path, vocab: int) -> None:
    want, got = Harness(want_art, num_blocks=32), Harness(got_art, num_blocks=32)
    prompt = np.random.default_rng(5).integers(0, vocab, PROMPT).tolist()
    for i in range(0, PROMPT, CHUNK):
        feed = {0: prompt[i : i + CHUNK]}
        assert np.abs(want.step(feed, True)[0] - got.step(feed, True)[0]).max() <= TOL
    for token in np.random.default_rng(6).integers(0, vocab, 8).tolist():
        assert np.abs(want.decode({0: token})[0] - got.decode({0: token})[0]).max() <= TOL


@pytest.fixture(scope="module")
def gguf_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("hybrid-kquants")
    folder = sharpened(make_tiny_model(root / "raw", QWEN35_K), root / "hf", QWEN35_K.seed)
    mixed = requantize(convert(folder, root / "f32.gguf"), root / "mix.gguf", MIX)
    reference = dequantized(mixed, root / "reference.gguf")
    # the float linear kernels compute exactly what the reference computes (the default int16
    # ones round each activation to 1/32767 of its 32-feature group's largest, which the
    # sharpened delta rule grows to ~3e-3 here; tests/models/test_gguf_kquants.py holds them)
    options = BuildOptions(linear_kernels=LinearKernels.FLOAT)
    return [
        compile_model(
            CompileRequest(str(path), output=root / path.stem, kv_dtype="float32", options=options)
        )
        for path in (mixed, reference)
    ]


def test_the_file_s_blocks_are_kept_and_the_state_parameters_stay_float(gguf_pair):
    mixed, _ = gguf_pair
    config = Artifact(mixed).config
    formats = {t: format_from_name(f) for t, f in config.weight_formats.items()}
    in_proj = formats["layers.0.delta.in_proj"]  # q|k|v and z Q4_K, then b and a Q8_0
    assert [f.row_major.name for _, f in in_proj.parts] == ["q4_k", "int8-sym-g32-float16"]
    assert formats["layers.0.delta.out_proj"].row_major.name == "q6_k"
    arrays = dict(load_arrays(Artifact(mixed).params_dir))
    state = [n for n in arrays if n.startswith("layers.0.delta.") and n.endswith(STATE_PARAMS)]
    assert len(state) == 4 and all(arrays[n].dtype == np.float32 for n in state)


def test_the_kept_blocks_compute_as_the_dequantized_file(gguf_pair):
    mixed, reference = gguf_pair
    _same_logits(reference, mixed, Artifact(mixed).config.model.vocab_size)


def _with_weights_of(dense: Path, quantized: Path, out: Path) -> Path:
    """A copy of the `dense` artifact whose matrices are `quantized`'s, unpacked."""
    shutil.copytree(dense, out, ignore=shutil.ignore_patterns("params"))
    ours, theirs = Artifact(dense).config.weight_formats, Artifact(quantized).config.weight_formats
    source = dict(load_arrays(Artifact(quantized).params_dir))
    writer, packed = ShardWriter(out / "params"), {}
    for name, array in load_arrays(Artifact(dense).params_dir):
        target, suffix = name.rsplit(".", 1)
        if target in ours:
            if target not in packed:
                fmt = format_from_name(theirs[target])
                planes = {s: source[f"{target}.{s}"] for s in fmt.suffixes}
                packed[target] = format_from_name(ours[target]).pack(fmt.unpack(planes))
            array = packed[target][suffix]
        writer.add(name, array)
    writer.finish()
    return out


def test_q4f32_computes_as_its_weights_unpacked(tmp_path_factory, tmp_path):
    quantized = compiled_hybrid(tmp_path_factory, "lfm2", quantization="q4f32", kernels="float")
    formats = Artifact(quantized).config.weight_formats
    assert format_from_name(formats["layers.0.conv.in_proj"]).row_major.name.startswith("int4")
    dense = compiled_hybrid(tmp_path_factory, "lfm2")
    reference = _with_weights_of(dense, quantized, tmp_path / "unpacked")
    _same_logits(reference, quantized, Artifact(quantized).config.model.vocab_size)


def test_q4f16_with_the_default_kernels_follows_q4f32(tmp_path_factory):
    """The same 4-bit codes and f16 scales with f16 activations and the default int16 kernels.
    f16 keeps 11 significant bits (each rounding moves a value by up to 2^-11 of it); the ~20
    roundings a token passes on its way through these 4 layers move a logit by up to
    ~20 * 2^-11 ~ 1% of the logits' scale (the int16 activations' 2^-15 is below that)."""
    exact = compiled_hybrid(tmp_path_factory, "lfm2", quantization="q4f32", kernels="float")
    half = compiled_hybrid(tmp_path_factory, "lfm2", quantization="q4f16")
    want, got = Harness(exact, num_blocks=32), Harness(half, num_blocks=32)
    vocab = Artifact(half).config.model.vocab_size
    prompt = np.random.default_rng(5).integers(0, vocab, PROMPT).tolist()
    rows = [
        (
            want.step({0: prompt[i : i + CHUNK]}, True)[0],
            got.step({0: prompt[i : i + CHUNK]}, True)[0],
        )
        for i in range(0, PROMPT, CHUNK)
    ]
    rows += [(want.decode({0: t})[0][None], got.decode({0: t})[0][None]) for t in prompt[:8]]
    for w, g in rows:
        assert np.abs(w - g).max() <= 0.01 * np.abs(w).max()
