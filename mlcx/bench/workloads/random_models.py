"""Random-weight models of real shapes, written as GGUF files both mlcx and llama.cpp load.

Speed depends on shapes, not on trained values, so a benchmark of a 1B model needs no
download: the weights are drawn at random (seeded), block-quantized, and written with a
minimal byte-level BPE vocabulary of the right size. Outputs are meaningless; timings are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as GT
from gguf.quants import quantize


@dataclass(frozen=True)
class LlamaShape:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    rope_theta: float = 500000.0
    context: int = 4096
    tie: bool = True
    rms_eps: float = 1e-5
    key_length: int | None = None  # head_dim where it is not hidden / heads (Qwen3)
    arch: str = "llama"  # GGUF architecture (llama.cpp's name)
    experts: int = 0  # a mixture of `experts` experts, each `intermediate` wide (0: dense)
    experts_used: int = 0
    qk_norm: bool = False  # RMSNorm over the q and k rows of all heads (OLMoE)
    rotary_dim: int | None = None  # features of a head RoPE turns where not all (Phi-4-mini)

    @property
    def head_dim(self) -> int:
        return self.key_length or self.hidden // self.heads


RANDOM_MODELS: dict[str, LlamaShape] = {
    # Llama-3.2-1B's and Llama-3.1-8B's shapes (default RoPE instead of llama3 frequency scaling;
    # the 1B ties its head to the embedding, the 8B does not).
    "llama-3.2-1b-random": LlamaShape(2048, 8192, 16, 32, 8, 128256),
    "llama-3.1-8b-random": LlamaShape(4096, 14336, 32, 32, 8, 128256, tie=False),
    # OLMoE-1B-7B's: 64 experts of 1024, 8 a token (1.3B of its 6.9B weights read a token)
    "olmoe-1b-7b-random": LlamaShape(
        2048,
        1024,
        16,
        16,
        16,
        50304,
        10000.0,
        tie=False,
        arch="olmoe",
        experts=64,
        experts_used=8,
        qk_norm=True,
    ),  # fmt: skip
}

# Q4_0 block: an f16 scale, then 16 bytes holding 32 4-bit codes (value = (code - 8) * scale)
Q4_0_BLOCK, Q4_0_BYTES = 32, 18
# Uniform codes 0..15 have a standard deviation of about 4.6: weights of std ~0.02
Q4_0_SCALE = np.float16(0.02 / 4.6)


def byte_alphabet() -> list[str]:
    """GPT-2's printable stand-ins for the 256 byte values (byte-level BPE base tokens)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    shifted = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(shifted)) for b in range(256)]


def write_byte_tokenizer(
    writer: gguf.GGUFWriter, vocab: int, named: tuple[str, ...] = (), add_bos: bool = False
) -> None:
    """Byte tokens, one merge ("ĠĠ": a byte-level BPE vocabulary needs merges to load), then
    `named` control tokens, then reserved ones up to `vocab`; BOS and EOS are the first two
    after the merge (named ones where given)."""
    base = byte_alphabet()
    words = [*base, "ĠĠ", *named]
    tokens = words + [f"<|reserved_{i}|>" for i in range(vocab - len(words))]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (len(base) + 1) + [3] * (vocab - len(base) - 1))
    writer.add_token_merges(["Ġ Ġ"])
    writer.add_bos_token_id(len(base) + 1)
    writer.add_eos_token_id(len(base) + 2)
    writer.add_add_bos_token(add_bos)


def _tensors(shape: LlamaShape):
    """(gguf name, shape) of every weight."""
    h, d = shape.hidden, shape.head_dim
    yield "token_embd.weight", (shape.vocab, h)
    yield "output_norm.weight", (h,)
    if not shape.tie:
        yield "output.weight", (shape.vocab, h)
    for i in range(shape.layers):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (h,)
        yield b + "attn_q.weight", (shape.heads * d, h)
        yield b + "attn_k.weight", (shape.kv_heads * d, h)
        yield b + "attn_v.weight", (shape.kv_heads * d, h)
        yield b + "attn_output.weight", (h, shape.heads * d)
        if shape.qk_norm:
            yield b + "attn_q_norm.weight", (shape.heads * d,)
            yield b + "attn_k_norm.weight", (shape.kv_heads * d,)
        yield b + "ffn_norm.weight", (h,)
        yield from _ffn(shape, b)


def _ffn(shape: LlamaShape, b: str):
    h, i, e = shape.hidden, shape.intermediate, shape.experts
    if not e:
        yield b + "ffn_gate.weight", (i, h)
        yield b + "ffn_up.weight", (i, h)
        yield b + "ffn_down.weight", (h, i)
        return
    yield b + "ffn_gate_inp.weight", (e, h)  # the router: float, as llama.cpp keeps it
    yield b + "ffn_gate_exps.weight", (e, i, h)
    yield b + "ffn_up_exps.weight", (e, i, h)
    yield b + "ffn_down_exps.weight", (e, h, i)


def llama_writer(shape: LlamaShape, out: Path, arch: str = "llama") -> gguf.GGUFWriter:
    """A GGUF writer for `out` with the hyper-parameters of `shape` already added under the
    llama-family architecture `arch` (`llama`, `qwen2`, `qwen3`: the same keys, prefixed)."""
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_block_count(shape.layers)
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_feed_forward_length(shape.intermediate)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_rope_freq_base(shape.rope_theta)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_rope_dimension_count(shape.rotary_dim or shape.head_dim)
    if shape.key_length:
        writer.add_key_length(shape.key_length)
        writer.add_value_length(shape.key_length)
    writer.add_vocab_size(shape.vocab)
    if shape.experts:
        writer.add_expert_count(shape.experts)
        writer.add_expert_used_count(shape.experts_used)
    return writer


def random_q4_0(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks of uniform random codes and one scale, written directly: an 8B model's
    weights in seconds (drawing normals and quantizing them takes minutes)."""
    blocks = rows * cols // Q4_0_BLOCK
    raw = np.empty((blocks, Q4_0_BYTES), np.uint8)
    raw[:, :2] = np.frombuffer(Q4_0_SCALE.tobytes(), np.uint8)
    raw[:, 2:] = np.frombuffer(rng.bytes(blocks * 16), np.uint8).reshape(blocks, 16)
    return raw.reshape(rows, cols // Q4_0_BLOCK * Q4_0_BYTES)


def write_random_gguf(shape: LlamaShape, out: Path, qtype: GT = GT.Q4_0, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    writer = llama_writer(shape, out, shape.arch)
    write_byte_tokenizer(writer, shape.vocab)
    for name, dims in _tensors(shape):
        if len(dims) == 1:
            writer.add_tensor(name, np.ones(dims, np.float32))
        elif name.endswith("ffn_gate_inp.weight"):
            writer.add_tensor(name, rng.standard_normal(dims, dtype=np.float32))
        elif qtype == GT.Q4_0:
            rows = random_q4_0(rng, int(np.prod(dims[:-1])), dims[-1])
            writer.add_tensor(name, rows.reshape(*dims[:-1], -1), raw_dtype=qtype)
        else:
            data = rng.standard_normal(dims, dtype=np.float32) * np.float32(0.02)
            writer.add_tensor(name, quantize(data, qtype), raw_dtype=qtype)
    return finish_gguf(writer, out)


def finish_gguf(writer: gguf.GGUFWriter, out: Path) -> Path:
    """Writes what `writer` holds to `out`."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
