"""A random Qwen2.5-VL pair of a real encoder's shape, laid out as llama.cpp's
convert_hf_to_gguf.py writes one: a `qwen2vl` text GGUF (M-RoPE sections, q/k/v biases, the
image tokens in its vocabulary) and an `mmproj` GGUF of projector type `qwen2.5vl_merger`
(q, k and v apart, the patch convolution as two frames, the window-attention period).

As with Gemma 3's pair, only the encoder's shape matters to `mlcx bench image`: the text model
keeps its width (the merger's output) but one layer and a small vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as GT

from mlcx.bench.workloads.random_models import (
    LlamaShape,
    finish_gguf,
    llama_writer,
    random_q4_0,
    write_byte_tokenizer,
)

# Qwen's chat markers and image tokens, control tokens of the byte vocabulary
TOKENS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>")
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}"
    "{{ m['content'] }}{% else %}{% for p in m['content'] %}{% if p['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ p['text'] }}{% endif %}{% endfor %}"
    "{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}"
)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class QwenVisionShape:
    hidden: int
    intermediate: int  # the SwiGLU MLP's width
    layers: int
    heads: int
    full_period: int  # every full_period-th layer attends over the whole image, the rest in windows
    patch: int = 14
    merge: int = 2  # patches merged a side into one token


@dataclass(frozen=True)
class MropeText:
    shape: LlamaShape
    sections: tuple[int, ...]  # M-RoPE's (time, height, width) rotary pairs


def _text_tensors(shape: LlamaShape):
    h, d = shape.hidden, shape.head_dim
    yield "token_embd.weight", (shape.vocab, h)
    yield "output_norm.weight", (h,)
    for i in range(shape.layers):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (h,)
        yield b + "ffn_norm.weight", (h,)
        kv = shape.kv_heads * d
        for proj, rows in (("q", shape.heads * d), ("k", kv), ("v", kv)):
            yield b + f"attn_{proj}.weight", (rows, h)
            yield b + f"attn_{proj}.bias", (rows,)
        yield b + "attn_output.weight", (h, shape.heads * d)
        yield b + "ffn_gate.weight", (shape.intermediate, h)
        yield b + "ffn_up.weight", (shape.intermediate, h)
        yield b + "ffn_down.weight", (h, shape.intermediate)


def write_text(text: MropeText, out: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    shape = text.shape
    writer = llama_writer(shape, out, shape.arch)
    writer.add_rope_dimension_sections([*text.sections, 0][:4])
    write_byte_tokenizer(writer, shape.vocab, TOKENS)
    writer.add_chat_template(CHATML)
    for name, dims in _text_tensors(shape):
        if len(dims) == 1:
            fill = np.zeros if name.endswith(".bias") else np.ones
            writer.add_tensor(name, fill(dims, np.float32))
        else:
            writer.add_tensor(name, random_q4_0(rng, dims[0], dims[1]), raw_dtype=GT.Q4_0)
    return finish_gguf(writer, out)


def _vision_tensors(v: QwenVisionShape, text_hidden: int):
    """(name, numpy shape) of every tensor, as the converter names them."""
    h, merged = v.hidden, v.hidden * v.merge**2
    for frame in ("", ".1"):
        yield f"v.patch_embd.weight{frame}", (h, 3, v.patch, v.patch)
    for i in range(v.layers):
        b = f"v.blk.{i}."
        yield b + "ln1.weight", (h,)
        yield b + "ln2.weight", (h,)
        for proj in ("attn_q", "attn_k", "attn_v", "attn_out"):
            yield b + f"{proj}.weight", (h, h)
            yield b + f"{proj}.bias", (h,)
        for proj in ("ffn_gate", "ffn_up"):
            yield b + f"{proj}.weight", (v.intermediate, h)
            yield b + f"{proj}.bias", (v.intermediate,)
        yield b + "ffn_down.weight", (h, v.intermediate)
        yield b + "ffn_down.bias", (h,)
    yield "v.post_ln.weight", (h,)
    yield "mm.0.weight", (merged, merged)
    yield "mm.0.bias", (merged,)
    yield "mm.2.weight", (text_hidden, merged)
    yield "mm.2.bias", (text_hidden,)


def _mmproj_writer(v: QwenVisionShape, text_hidden: int, out: Path) -> gguf.GGUFWriter:
    writer = gguf.GGUFWriter(str(out), "clip")
    writer.add_string("clip.projector_type", "qwen2.5vl_merger")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_bool("clip.use_silu", True)
    for key, value in {
        "image_size": 560,  # the converter's placeholder: Qwen-VL resizes to the image's own grid
        "patch_size": v.patch,
        "embedding_length": v.hidden,
        "feed_forward_length": v.intermediate,
        "block_count": v.layers,
        "attention.head_count": v.heads,
        "projection_dim": text_hidden,
        "n_wa_pattern": v.full_period,
    }.items():
        writer.add_uint32(f"clip.vision.{key}", value)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    writer.add_array("clip.vision.image_mean", list(CLIP_MEAN))
    writer.add_array("clip.vision.image_std", list(CLIP_STD))
    return writer


def write_mmproj(v: QwenVisionShape, text_hidden: int, out: Path, seed: int = 1) -> Path:
    """Matrices and the patch kernel f16 (the converter's --outtype f16), vectors f32."""
    rng = np.random.default_rng(seed)
    writer = _mmproj_writer(v, text_hidden, out)
    for name, dims in _vision_tensors(v, text_hidden):
        if len(dims) == 1:
            norm = "ln" in name
            writer.add_tensor(name, (np.ones if norm else np.zeros)(dims, np.float32))
        else:
            data = rng.standard_normal(dims, dtype=np.float32) * np.float32(0.02)
            writer.add_tensor(name, data.astype(np.float16))
    return finish_gguf(writer, out)


@dataclass(frozen=True)
class QwenPair:
    text: MropeText
    vision: QwenVisionShape
    family: str = "qwen2_5_vl"  # the encoder family the artifact reads as

    def write_text(self, out: Path) -> Path:
        return write_text(self.text, out)

    def write_mmproj(self, out: Path) -> Path:
        return write_mmproj(self.vision, self.text.shape.hidden, out)
