"""A random-weight gpt-oss written as llama.cpp's converter writes the released checkpoints:
architecture `gpt-oss`, experts as MXFP4 blocks (ggml type 39), the other matrices Q8_0 (as in
the 12.1 GB gpt-oss-20b GGUF), norms, biases, sinks and the router float32. Tensor names and
metadata keys are the converter's (conversion/gpt_oss.py), so llama.cpp loads the file and
mlcx reads it as any downloaded one. Outputs are meaningless; timings are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.bench.workloads.random_models import write_byte_tokenizer
from mlcx.quantization.mxfp4_blocks import BLOCK_BYTES as MXFP4_BYTES

GROUP = 32
Q8_0_BYTES = 34  # an f16 scale, then 32 int8 codes
Q8_0_SCALE = np.float16(0.02 / 73.6)  # uniform int8 codes: a std of ~73.6, weights of ~0.02
# E2M1 codes drawn uniformly have a std of ~5.8 in ggml's doubled units: 2 ** (120 - 128)
# times that, weights of ~0.02
MXFP4_EXPONENT = 120


@dataclass(frozen=True)
class GptOssShape:
    hidden: int = 2880
    layers: int = 24
    heads: int = 64
    kv_heads: int = 8
    head_dim: int = 64
    experts: int = 32
    experts_used: int = 4
    expert_width: int = 2880
    vocab: int = 201088
    window: int = 128
    rope_theta: float = 150000.0
    yarn_factor: float = 32.0
    original_context: int = 4096

    @property
    def context(self) -> int:
        return int(self.original_context * self.yarn_factor)


def random_q8_0(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Q8_0 blocks of uniform random codes and one scale, written directly."""
    blocks = rows * cols // GROUP
    raw = np.empty((blocks, Q8_0_BYTES), np.uint8)
    raw[:, :2] = np.frombuffer(Q8_0_SCALE.tobytes(), np.uint8)
    raw[:, 2:] = np.frombuffer(rng.bytes(blocks * GROUP), np.uint8).reshape(blocks, GROUP)
    return raw.reshape(rows, cols // GROUP * Q8_0_BYTES)


def random_mxfp4(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """MXFP4 blocks (ggml's layout: the exponent byte, 16 bytes of codes) of random codes."""
    blocks = rows * cols // GROUP
    raw = np.empty((blocks, MXFP4_BYTES), np.uint8)
    raw[:, 0] = MXFP4_EXPONENT
    raw[:, 1:] = np.frombuffer(rng.bytes(blocks * 16), np.uint8).reshape(blocks, 16)
    return raw.reshape(rows, cols // GROUP * MXFP4_BYTES)


def _metadata(shape: GptOssShape, out: Path) -> gguf.GGUFWriter:
    writer = gguf.GGUFWriter(str(out), "gpt-oss")
    writer.add_block_count(shape.layers)
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_feed_forward_length(shape.expert_width)
    writer.add_expert_feed_forward_length(shape.expert_width)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_theta)
    writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    writer.add_rope_scaling_factor(shape.yarn_factor)
    writer.add_rope_scaling_orig_ctx_len(shape.original_context)
    writer.add_rope_scaling_yarn_beta_fast(32.0)
    writer.add_rope_scaling_yarn_beta_slow(1.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_expert_count(shape.experts)
    writer.add_expert_used_count(shape.experts_used)
    writer.add_sliding_window(shape.window)
    writer.add_vocab_size(shape.vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_MXFP4_MOE)
    return writer


def _layer(shape: GptOssShape, i: int):
    """(name, dims, kind) of layer i's tensors; kind: q8_0, mxfp4, ones, zeros or normal."""
    b, h, d, e, w = f"blk.{i}.", shape.hidden, shape.head_dim, shape.experts, shape.expert_width
    q, kv = shape.heads * d, shape.kv_heads * d
    yield b + "attn_norm.weight", (h,), "ones"
    yield b + "post_attention_norm.weight", (h,), "ones"
    for name, rows in (("attn_q", q), ("attn_k", kv), ("attn_v", kv)):
        yield b + name + ".weight", (rows, h), "q8_0"
        yield b + name + ".bias", (rows,), "zeros"
    yield b + "attn_output.weight", (h, q), "q8_0"
    yield b + "attn_output.bias", (h,), "zeros"
    yield b + "attn_sinks.weight", (shape.heads,), "zeros"
    yield b + "ffn_gate_inp.weight", (e, h), "normal"  # the router, float as llama.cpp keeps it
    yield b + "ffn_gate_inp.bias", (e,), "zeros"
    for name, rows, cols in (("gate", w, h), ("up", w, h), ("down", h, w)):
        yield b + f"ffn_{name}_exps.weight", (e, rows, cols), "mxfp4"
        yield b + f"ffn_{name}_exps.bias", (e, rows), "zeros"


def _tensors(shape: GptOssShape):
    yield "token_embd.weight", (shape.vocab, shape.hidden), "q8_0"
    yield "output_norm.weight", (shape.hidden,), "ones"
    yield "output.weight", (shape.vocab, shape.hidden), "q8_0"
    for i in range(shape.layers):
        yield from _layer(shape, i)


_RAW = {"q8_0": (random_q8_0, GT.Q8_0), "mxfp4": (random_mxfp4, GT.MXFP4)}


def write_random_gpt_oss(shape: GptOssShape, out: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    writer = _metadata(shape, out)
    write_byte_tokenizer(writer, shape.vocab)
    for name, dims, kind in _tensors(shape):
        if kind in _RAW:
            draw, qtype = _RAW[kind]
            rows = draw(rng, int(np.prod(dims[:-1])), dims[-1])
            writer.add_tensor(name, rows.reshape(*dims[:-1], -1), raw_dtype=qtype)
        elif kind == "normal":
            writer.add_tensor(name, rng.standard_normal(dims, dtype=np.float32))
        else:
            writer.add_tensor(name, np.full(dims, kind == "ones", np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
