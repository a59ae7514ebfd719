"""Random-weight hybrid models of real shapes (Qwen3.5: Gated DeltaNet layers beside gated
attention; LFM2: short convolutions beside attention), written as GGUF files with llama.cpp's
own metadata keys and tensor names (`qwen35`, `lfm2`), so that mlcx and llama.cpp load the same
file. The state layers' float parameters (conv taps, decays) stay F32 as llama.cpp's converter
writes them; the matrices are random Q4_0 blocks (random_models.random_q4_0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.bench.workloads.random_models import random_q4_0, write_byte_tokenizer


@dataclass(frozen=True)
class HybridShape:
    arch: str  # llama.cpp's: "qwen35" or "lfm2"
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    attention_layers: tuple[int, ...]  # the rest are state layers
    rope_theta: float
    rotary_dim: int = 0  # 0: the whole head
    # qwen35: the delta rule's heads (k and v) and head widths; lfm2: unused
    linear_k_heads: int = 0
    linear_v_heads: int = 0
    linear_head_dim: int = 0
    conv_kernel: int = 4  # qwen35: the conv before the delta rule; lfm2: the short conv
    context: int = 4096
    rms_eps: float = 1e-6


HYBRID_MODELS: dict[str, HybridShape] = {
    # Qwen3.5-2B's text model: 24 layers of 2048, every 4th attention (8 q heads of 256, gated,
    # 2 KV heads, RoPE over a quarter of each head); the other 18 Gated DeltaNet layers; a tied
    # head over 248320 tokens. Published: layers, width, heads, KV heads, attention every 4th
    # layer. Taken from the family's larger configs (Qwen3.5-4B/9B: head_dim 256, linear heads
    # of 128, conv 4) and sized to the published ~1.9B text weights: 16 linear k and v heads,
    # an MLP of 6144.
    "qwen3.5-2b-random": HybridShape(
        "qwen35", 2048, 6144, 24, 8, 2, 256, 248320, (3, 7, 11, 15, 19, 23), 1e7, 64, 16, 16, 128
    ),
    # LFM2-1.2B's published config: 16 layers of 2048, attention at 2, 5, 8, 10, 12, 14 (32 q
    # heads, 8 KV heads), short convolutions of 3 taps elsewhere, an MLP of 8192 (block_ff_dim
    # 12288 auto-adjusted), a tied head over 65536 tokens.
    "lfm2-1.2b-random": HybridShape(
        "lfm2", 2048, 8192, 16, 32, 8, 64, 65536, (2, 5, 8, 10, 12, 14), 1e6, conv_kernel=3,
        rms_eps=1e-5,
    ),
}  # fmt: skip


def _metadata(w: gguf.GGUFWriter, s: HybridShape) -> None:
    w.add_block_count(s.layers)
    w.add_context_length(s.context)
    w.add_embedding_length(s.hidden)
    w.add_feed_forward_length(s.intermediate)
    w.add_head_count(s.heads)
    w.add_rope_freq_base(s.rope_theta)
    w.add_layer_norm_rms_eps(s.rms_eps)
    w.add_vocab_size(s.vocab)
    if s.arch == "lfm2":  # KV heads per layer: none in a convolution layer
        w.add_head_count_kv([s.kv_heads if i in s.attention_layers else 0 for i in range(s.layers)])
        w.add_shortconv_l_cache(s.conv_kernel)
        return
    w.add_head_count_kv(s.kv_heads)
    w.add_key_length(s.head_dim)
    w.add_value_length(s.head_dim)
    rotary = s.rotary_dim or s.head_dim
    w.add_rope_dimension_count(rotary)
    w.add_rope_dimension_sections(_mrope_sections(rotary))
    w.add_full_attention_interval(s.attention_layers[0] + 1)  # every n-th layer, n - 1 first
    w.add_ssm_conv_kernel(s.conv_kernel)
    w.add_ssm_state_size(s.linear_head_dim)
    w.add_ssm_group_count(s.linear_k_heads)
    w.add_ssm_time_step_rank(s.linear_v_heads)
    w.add_ssm_inner_size(s.linear_v_heads * s.linear_head_dim)


def _attention(s: HybridShape, b: str):
    h, d = s.hidden, s.head_dim
    q_rows = s.heads * d * (2 if s.arch == "qwen35" else 1)  # Qwen3.5: each head's gate too
    yield b + "attn_q.weight", (q_rows, h)
    yield b + "attn_k.weight", (s.kv_heads * d, h)
    yield b + "attn_v.weight", (s.kv_heads * d, h)
    yield b + "attn_output.weight", (h, s.heads * d)
    yield b + "attn_q_norm.weight", (d,)
    yield b + "attn_k_norm.weight", (d,)


def _state_layer(s: HybridShape, b: str):
    """(name, shape, F32 fill value or None for Q4_0) of a state layer's tensors."""
    h = s.hidden
    if s.arch == "lfm2":
        yield b + "shortconv.in_proj.weight", (3 * h, h), None
        yield b + "shortconv.conv.weight", (h, s.conv_kernel), 0.1
        yield b + "shortconv.out_proj.weight", (h, h), None
        return
    keys, values = s.linear_k_heads * s.linear_head_dim, s.linear_v_heads * s.linear_head_dim
    heads = s.linear_v_heads
    yield b + "attn_qkv.weight", (2 * keys + values, h), None
    yield b + "attn_gate.weight", (values, h), None
    yield b + "ssm_beta.weight", (heads, h), 0.01
    yield b + "ssm_alpha.weight", (heads, h), 0.01
    yield b + "ssm_conv1d.weight", (2 * keys + values, s.conv_kernel), 0.1
    yield b + "ssm_dt.bias", (heads,), 0.0
    yield b + "ssm_a", (heads,), -1.0  # -exp(A_log): a decay
    yield b + "ssm_norm.weight", (s.linear_head_dim,), 1.0
    yield b + "ssm_out.weight", (h, values), None


def _tensors(s: HybridShape):
    """(gguf name, shape, F32 fill value or None for Q4_0) of every weight."""
    yield "token_embd.weight", (s.vocab, s.hidden), None
    yield ("token_embd_norm.weight" if s.arch == "lfm2" else "output_norm.weight"), (s.hidden,), 1.0
    for i in range(s.layers):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (s.hidden,), 1.0
        norm = "ffn_norm" if s.arch == "lfm2" else "post_attention_norm"
        yield b + f"{norm}.weight", (s.hidden,), 1.0
        if i in s.attention_layers:
            yield from (
                (name, dims, 1.0 if len(dims) == 1 else None) for name, dims in _attention(s, b)
            )
        else:
            yield from _state_layer(s, b)
        yield b + "ffn_gate.weight", (s.intermediate, s.hidden), None
        yield b + "ffn_up.weight", (s.intermediate, s.hidden), None
        yield b + "ffn_down.weight", (s.hidden, s.intermediate), None


def write_hybrid_gguf(shape: HybridShape, out: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(out), shape.arch)
    _metadata(writer, shape)
    write_byte_tokenizer(writer, shape.vocab)
    for name, dims, fill in _tensors(shape):
        if fill is None:
            rows = random_q4_0(rng, dims[0], dims[1])
            writer.add_tensor(name, rows, raw_dtype=GT.Q4_0)
        elif len(dims) == 1 or fill in (0.0, 1.0, -1.0):
            writer.add_tensor(name, np.full(dims, fill, np.float32))
        else:
            writer.add_tensor(name, rng.standard_normal(dims, dtype=np.float32) * np.float32(fill))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _mrope_sections(rotary: int) -> list[int]:
    """Qwen3.5's t/h/w split of the rotary pairs (11, 11, 10 of 32), scaled to `rotary`: with
    text positions every section rotates alike (plain RoPE), but llama.cpp requires the
    sections to cover no more than the rotary pairs."""
    pairs = rotary // 2
    side = pairs * 11 // 32
    return [side, side, pairs - 2 * side, 0]
