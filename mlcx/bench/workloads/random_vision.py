"""Random-weight vision-language pairs of real encoder shapes, written as llama.cpp lays them
out: a text GGUF and an `mmproj` GGUF (here Gemma 3's, projector type gemma3; Qwen2.5-VL's in
random_qwen_vision). Both mlcx (`--mmproj`) and llama.cpp's mtmd load the same two files, so
image encoding is timed on equal inputs.

Only the encoder's shape matters to `mlcx bench image`: the text model keeps Gemma 3's width
(the projector's output) but one layer and a small vocabulary, which keeps the files small."""

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
from mlcx.bench.workloads.random_qwen_vision import MropeText, QwenPair, QwenVisionShape
from mlcx.cache import cache_dir
from mlcx.frontends.gemma3_vision.mmproj import BOI, EOI, IMAGE


@dataclass(frozen=True)
class SiglipShape:
    image: int
    patch: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    pool: int  # the projector's average pooling (llama.cpp's projector.scale_factor)


@dataclass(frozen=True)
class VisionPair:
    text: LlamaShape
    vision: SiglipShape
    family: str = "gemma3"  # the encoder family the artifact reads as

    def write_text(self, out: Path) -> Path:
        return write_text(self.text, out)

    def write_mmproj(self, out: Path) -> Path:
        return write_mmproj(self.vision, self.text.hidden, out)


RANDOM_VISION: dict[str, VisionPair | QwenPair] = {
    # Gemma 3 4B's: SigLIP-So400m at 896x896 (4096 patches pooled to 256 tokens), text width 2560
    "gemma3-4b-vision-random": VisionPair(
        LlamaShape(2560, 10240, 1, 8, 4, 1024, 1000000.0, key_length=256, arch="gemma3"),
        SiglipShape(896, 14, 1152, 4304, 27, 16, 4),
    ),
    # Qwen2.5-VL 7B's: 32 layers of 1280 (head_dim 80, SwiGLU 3420), full attention every 8th
    # layer and 112-pixel windows otherwise, merged 2x2 into the text width 3584
    "qwen2.5vl-7b-vision-random": QwenPair(
        MropeText(
            LlamaShape(3584, 18944, 1, 28, 4, 1024, 1000000.0, rms_eps=1e-6, arch="qwen2vl"),
            (16, 24, 24),
        ),
        QwenVisionShape(1280, 3420, 32, 16, full_period=8),
    ),
}


def _text_tensors(shape: LlamaShape):
    h, d = shape.hidden, shape.head_dim
    yield "token_embd.weight", (shape.vocab, h)
    yield "output_norm.weight", (h,)
    for i in range(shape.layers):
        b = f"blk.{i}."
        for norm in ("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"):
            yield b + f"{norm}.weight", (h,)
        yield b + "attn_q_norm.weight", (d,)
        yield b + "attn_k_norm.weight", (d,)
        yield b + "attn_q.weight", (shape.heads * d, h)
        yield b + "attn_k.weight", (shape.kv_heads * d, h)
        yield b + "attn_v.weight", (shape.kv_heads * d, h)
        yield b + "attn_output.weight", (h, shape.heads * d)
        yield b + "ffn_gate.weight", (shape.intermediate, h)
        yield b + "ffn_up.weight", (shape.intermediate, h)
        yield b + "ffn_down.weight", (h, shape.intermediate)


def write_text(shape: LlamaShape, out: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    writer = llama_writer(shape, out, shape.arch)
    writer.add_sliding_window(512)
    # Gemma 3's image tokens, which the mmproj path looks up by name
    write_byte_tokenizer(writer, shape.vocab, ("<bos>", "<eos>", BOI, EOI, IMAGE), add_bos=True)
    for name, dims in _text_tensors(shape):
        if len(dims) == 1:
            writer.add_tensor(name, np.ones(dims, np.float32))
        else:
            rows = random_q4_0(rng, dims[0], dims[1])
            writer.add_tensor(name, rows, raw_dtype=GT.Q4_0)
    return finish_gguf(writer, out)


def _vision_tensors(v: SiglipShape, text_hidden: int):
    """(name, shape) as numpy shapes."""
    h = v.hidden
    yield "v.patch_embd.weight", (h, 3, v.patch, v.patch)
    yield "v.patch_embd.bias", (h,)
    yield "v.position_embd.weight", ((v.image // v.patch) ** 2, h)
    for i in range(v.layers):
        b = f"v.blk.{i}."
        for norm in ("ln1", "ln2"):
            yield b + f"{norm}.weight", (h,)
            yield b + f"{norm}.bias", (h,)
        for proj in ("attn_q", "attn_k", "attn_v", "attn_out"):
            yield b + f"{proj}.weight", (h, h)
            yield b + f"{proj}.bias", (h,)
        yield b + "ffn_up.weight", (v.intermediate, h)
        yield b + "ffn_up.bias", (v.intermediate,)
        yield b + "ffn_down.weight", (h, v.intermediate)
        yield b + "ffn_down.bias", (h,)
    yield "v.post_ln.weight", (h,)
    yield "v.post_ln.bias", (h,)
    yield "mm.soft_emb_norm.weight", (h,)
    yield "mm.input_projection.weight", (h, text_hidden)


def mmproj_writer(v: SiglipShape, text_hidden: int, out: Path, eps: float = 1e-6):
    """A GGUF writer for `out` with llama.cpp's mmproj metadata of a Gemma 3 encoder."""
    writer = gguf.GGUFWriter(str(out), "clip")
    writer.add_string("clip.projector_type", "gemma3")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_bool("clip.use_gelu", True)
    for key, value in {
        "image_size": v.image,
        "patch_size": v.patch,
        "embedding_length": v.hidden,
        "feed_forward_length": v.intermediate,
        "block_count": v.layers,
        "attention.head_count": v.heads,
        "projector.scale_factor": v.pool,
        "projection_dim": text_hidden,
    }.items():
        writer.add_uint32(f"clip.vision.{key}", value)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", eps)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    return writer


def write_mmproj(v: SiglipShape, text_hidden: int, out: Path, seed: int = 1) -> Path:
    """Matrices and the patch kernel f16 (llama.cpp's converter), vectors f32."""
    rng = np.random.default_rng(seed)
    writer = mmproj_writer(v, text_hidden, out)
    for name, dims in _vision_tensors(v, text_hidden):
        if len(dims) == 1:
            value = np.ones(dims, np.float32) if "norm" in name or "ln" in name else None
            writer.add_tensor(name, value if value is not None else np.zeros(dims, np.float32))
        else:
            data = rng.standard_normal(dims, dtype=np.float32) * np.float32(0.02)
            # llama.cpp adds the position table to f32 rows: it stays f32, as its converter keeps it
            writer.add_tensor(name, data if "position" in name else data.astype(np.float16))
    return finish_gguf(writer, out)


def ensure_random_vision(name: str, say=print) -> tuple[Path, Path]:
    """The cached (text GGUF, mmproj GGUF) of a named random pair, written on first use."""
    pair = RANDOM_VISION[name]
    folder = cache_dir() / "bench"
    paths = (folder / f"{name}.text.Q4_0.gguf", folder / f"{name}.mmproj.f16.gguf")
    for path, write in zip(paths, (pair.write_text, pair.write_mmproj), strict=True):
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            say(f"writing random {name} weights to {path}")
            partial = path.with_suffix(".partial")
            write(partial)
            partial.rename(path)
    return paths
