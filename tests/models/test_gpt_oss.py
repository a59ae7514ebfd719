"""gpt-oss end to end on a tiny random GptOssForCausalLM (tests/support/tiny_gpt_oss.py):
attention sinks, a 16-token window on every other layer, q/k/v/o biases, YaRN, the biased
router taking the top 4 before its softmax, biased experts with the clamped SwiGLU.

Three sources of the same model: the unquantized HF folder, the HF folder storing its experts
as MXFP4 `*_blocks` / `*_scales` (as released), and the GGUF llama.cpp's own converter writes
of it (MXFP4 experts, ggml type 39). The MXFP4 bytes are kept: the artifacts' planes packed
back are the files' bytes. Each source's logits stay within 1e-4 of transformers over a prompt
longer than the window, with 32 greedy tokens equal (for MXFP4, transformers dequantizes the
same blocks, so both sides hold the same weights).
"""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from safetensors.numpy import load_file

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.frontends.source import load_source
from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.formats import format_from_name
from tests.support.gguf_vs_hf import assert_matches_transformers, converted_weights
from tests.support.gpt_oss_builds import SOURCES
from tests.support.tiny_gpt_oss import CONFIG, PROMPT, WINDOW, load_mxfp4_reference

LAYERS = CONFIG["num_hidden_layers"]


def _float32(cfg: dict) -> dict:
    """A config with its floats as float32 (as a GGUF stores them)."""
    return {k: np.float32(v) if isinstance(v, float) else v for k, v in cfg.items()}


def test_the_three_sources_read_as_one_model(gpt_oss):
    sources = {name: load_source(str(gpt_oss.source(name))) for name in SOURCES}
    assert {s.arch.name for s in sources.values()} == {"gpt_oss"}
    assert sources["gguf"].tensors.architecture == "gpt-oss"
    configs = [_float32(s.config.to_dict()) for s in sources.values()]
    assert configs[0] == configs[1] == configs[2]
    cfg = sources["hf"].config
    assert cfg.attn_sinks and cfg.qkv_bias and cfg.o_bias and cfg.sliding_window == WINDOW
    assert cfg.rope_scaling["rope_type"] == "yarn" and cfg.rope_scaling["truncate"] is False
    assert (cfg.num_experts, cfg.experts_per_token) == (CONFIG["num_local_experts"], 4)
    moe = cfg.moe_options
    assert moe.router_bias and moe.scoring == "topk_softmax" and moe.expert_bias
    assert (moe.glu.alpha, moe.glu.limit, moe.glu.up_shift) == (1.702, 7.0, 1.0)


def _gguf_rows(reader: gguf.GGUFReader, name: str) -> np.ndarray:
    [tensor] = [t for t in reader.tensors if t.name == name]
    assert tensor.tensor_type == gguf.GGMLQuantizationType.MXFP4
    data = np.asarray(tensor.data)
    return data.reshape(-1, data.shape[-1])


def _ggml_bytes(arrays: dict, fmt_name: str, target: str) -> np.ndarray:
    """The GGUF bytes of the MXFP4 planes of `target` (in either layout)."""
    fmt = format_from_name(fmt_name)
    assert fmt.row_major.name == "mxfp4"
    return mb.parts_to_ggml(*fmt.parts({s: arrays[f"{target}.{s}"] for s in fmt.suffixes}))


def _file_rows(reader: gguf.GGUFReader, layer: int) -> dict[str, np.ndarray]:
    """Layer `layer`'s expert stacks as the GGUF stores them: gate rows, then up rows."""
    rows = {
        proj: _gguf_rows(reader, f"blk.{layer}.ffn_{proj}_exps.weight")
        for proj in ("gate", "up", "down")
    }
    return {"gate_up": np.concatenate([rows["gate"], rows["up"]]), "down": rows["down"]}


def _deinterleaved(stored: np.ndarray) -> np.ndarray:
    """A checkpoint's gate_up_proj_blocks/_scales [E, 2I, ...] as rows: gate, then up."""
    both = np.concatenate([stored[:, 0::2], stored[:, 1::2]])
    return both.reshape(both.shape[0] * both.shape[1], -1)


def test_mxfp4_experts_packed_back_are_the_files_bytes(gpt_oss):
    """The GGUF artifact's expert planes are the file's blocks; the MXFP4 folder's are the
    checkpoint's `*_blocks` and `*_scales` (gate rows, then up rows) and llama.cpp's repacking
    of them, byte for byte."""
    artifact = Artifact(gpt_oss.artifact("gguf"))
    ours, formats = dict(load_arrays(artifact.params_dir)), artifact.config.weight_formats
    _, from_hf = converted_weights(gpt_oss.source("mxfp4"))
    reader = gguf.GGUFReader(gpt_oss.gguf)
    ckpt = load_file(str(gpt_oss.source("mxfp4") / "model.safetensors"))
    for i in range(LAYERS):
        base = f"layers.{i}.moe."
        for proj, want in _file_rows(reader, i).items():
            got = _ggml_bytes(ours, formats[base + proj], base + proj)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(_ggml_bytes(from_hf, "mxfp4", base + proj), want)
        stored = f"model.layers.{i}.mlp.experts.gate_up_proj_"
        qweight = np.ascontiguousarray(from_hf[base + "gate_up.qweight"])
        # the planes' code words are the checkpoint's block bytes, its exponents the scales
        blocks = _deinterleaved(ckpt[stored + "blocks"])
        np.testing.assert_array_equal(qweight.view(np.uint8), blocks)
        scales = _deinterleaved(ckpt[stored + "scales"])
        np.testing.assert_array_equal(from_hf[base + "gate_up.exponents"], scales)


@pytest.mark.parametrize("source", SOURCES)
def test_logits_and_greedy_tokens_match_transformers(gpt_oss, source):
    folders = gpt_oss.folders
    reference = None if source == "hf" else load_mxfp4_reference(folders.mxfp4)
    assert_matches_transformers(
        gpt_oss.source("hf" if source == "hf" else "mxfp4"),
        gpt_oss.artifact(source),
        prompt_tokens=PROMPT,
        reference=reference,
    )


def test_the_gguf_ends_a_reply_where_the_folder_does(gpt_oss):
    """`<|return|>` and `<|call|>` (the folder's generation config; the GGUF names one eos,
    llama.cpp finds the other by its text)."""
    from mlcx.runtime.text.tokenizer import Tokenizer

    folder, file = (Tokenizer.from_dir(gpt_oss.artifact(s)) for s in ("mxfp4", "gguf"))
    ends = {folder.token_to_id(t) for t in ("<|return|>", "<|call|>")}
    assert ends <= set(folder.eos_token_ids) and ends == set(file.eos_token_ids)


def test_the_default_int16_kernels_keep_the_greedy_tokens(gpt_oss):
    """`mlcx compile`'s default cpu kernels (int16 activations against the MXFP4 codes): the
    logits within 1e-3 (two int16 roundings through the gated product), the same 32 tokens."""
    folder = gpt_oss.source("mxfp4")
    artifact = gpt_oss.artifact("mxfp4", kernels="int16")
    reference = load_mxfp4_reference(folder)
    assert_matches_transformers(folder, artifact, PROMPT, reference, tol=1e-3)
