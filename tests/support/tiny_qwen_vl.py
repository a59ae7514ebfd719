"""Tiny random Qwen2.5-VL and Qwen3-VL folders written by transformers, with the processor
config their checkpoints ship: a 2-layer vision tower with dynamic resolution (Qwen2.5-VL:
14-px patches, RMSNorm, SwiGLU, 56-px windows in layer 0 and full attention in layer 1;
Qwen3-VL: 16-px patches, LayerNorm, GELU, a 4x4 learned position grid resampled to each image,
deepstack features after layer 0), 2x2 merge, and a 2-layer text model with M-RoPE (Qwen2.5-VL:
Qwen2 text, sections [2, 3, 3]; Qwen3-VL: Qwen3 text, interleaved sections [4, 2, 2]); a BPE
tokenizer with Qwen's vision tokens and a chat template writing
<|vision_start|><|image_pad|><|vision_end|> for an image part."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.tiny_models import CORPUS
from tests.support.tiny_tokenizers import train_byte_level_bpe

START, END, PAD = "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", START, END, PAD, "<|video_pad|>"]
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    + START
    + PAD
    + END
    + "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MIN_PIXELS, MAX_PIXELS = 56 * 56, 112 * 112  # a few merged tokens to 16 (Qwen2.5-VL)

# kind -> (config class, model class, patch size, processor mean/std)
KINDS = {
    "qwen2_5_vl": ("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration", 14, "clip"),
    "qwen3_vl": ("Qwen3VLConfig", "Qwen3VLForConditionalGeneration", 16, "half"),
}
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def _tokenizer(folder: Path) -> dict[str, int]:
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 384)
    backend.save(str(folder / "tokenizer.json"))
    config = {"bos_token": None, "eos_token": "<|im_end|>", "chat_template": TEMPLATE}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    ids = {name: backend.token_to_id(name) for name in (START, END, PAD, "<|video_pad|>")}
    return {"vocab": backend.get_vocab_size(), **ids}


def _text(kind: str, vocab: int) -> dict:
    text = dict(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
        bos_token_id=0,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    if kind == "qwen2_5_vl":
        rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}
        return {**text, "rope_parameters": rope}
    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": [4, 2, 2],
        "mrope_interleaved": True,
    }
    return {**text, "head_dim": 16, "rope_parameters": rope}


def _vision(kind: str) -> dict:
    vision = dict(
        depth=2,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        in_channels=3,
        spatial_merge_size=2,
        temporal_patch_size=2,
        out_hidden_size=64,
    )
    if kind == "qwen2_5_vl":
        windows = dict(window_size=56, fullatt_block_indexes=[1], hidden_act="silu")
        return {**vision, "patch_size": 14, **windows}
    extra = dict(num_position_embeddings=16, deepstack_visual_indexes=[0])
    return {**vision, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh", **extra}


def classes(kind: str):
    import transformers

    config_cls, model_cls, _, _ = KINDS[kind]
    return getattr(transformers, config_cls), getattr(transformers, model_cls)


def processor_config(kind: str) -> dict:
    """preprocessor_config.json as Qwen's checkpoints write it."""
    _, _, patch, norm = KINDS[kind]
    mean, std = (CLIP_MEAN, CLIP_STD) if norm == "clip" else ([0.5] * 3, [0.5] * 3)
    scale = (patch / 14) ** 2
    return {
        "image_processor_type": "Qwen2VLImageProcessor",
        "do_resize": True,
        "resample": 3,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": mean,
        "image_std": std,
        "do_convert_rgb": True,
        "min_pixels": round(MIN_PIXELS * scale),
        "max_pixels": round(MAX_PIXELS * scale),
        "patch_size": patch,
        "temporal_patch_size": 2,
        "merge_size": 2,
    }


def make_tiny_qwen_vl(
    folder: Path, kind: str = "qwen2_5_vl", seed: int = 51, vision: dict | None = None
) -> Path:
    """`vision`: vision_config fields over the defaults above."""
    import torch

    config_cls, model_cls = classes(kind)
    folder.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(folder)
    cfg = config_cls(
        text_config=_text(kind, ids["vocab"]),
        vision_config={**_vision(kind), **(vision or {})},
        image_token_id=ids[PAD],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids[START],
        vision_end_token_id=ids[END],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = model_cls(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.1)
    model.eval().save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(processor_config(kind)))
    return folder


def load_reference(folder: Path, kind: str):
    _, model_cls = classes(kind)
    return model_cls.from_pretrained(folder, dtype="float32").eval()


def hf_image_inputs(folder: Path, image) -> dict:
    """pixel_values and image_grid_thw from transformers' own (PIL) Qwen2-VL processor."""
    from transformers import AutoImageProcessor

    processor = AutoImageProcessor.from_pretrained(folder)
    return processor(images=[image], return_tensors="pt")


# kind -> vision_config fields llama.cpp's converter and mtmd can express: for Qwen2.5-VL a
# merger it maps (mlp.2 is read as block 2, so 3 layers or more) and its fixed 112-pixel
# windows (the mmproj has no key for them)
LLAMACPP_VISION = {"qwen2_5_vl": {"depth": 3, "window_size": 112}, "qwen3_vl": {}}
LLAMACPP_TOKENS = (8, 4096)  # mtmd's merged-token bounds of a Qwen-VL image


def gguf_pair(folder: Path, root: Path) -> tuple[Path, Path]:
    """(text GGUF, mmproj GGUF) of a Qwen-VL folder made with LLAMACPP_VISION, both
    written by llama.cpp's own convert_hf_to_gguf.py (f32)."""
    from tests.support.llamacpp_convert import convert

    return convert(folder, root / "text.gguf"), convert(folder, root / "mmproj.gguf", mmproj=True)


def with_llamacpp_bounds(folder: Path, out: Path) -> Path:
    """A copy of the folder whose processor takes images within mtmd's token bounds (the
    reference for an artifact compiled from its mmproj)."""
    import shutil

    shutil.copytree(folder, out)
    config = json.loads((out / "preprocessor_config.json").read_text())
    area = (config["patch_size"] * config["merge_size"]) ** 2
    low, high = LLAMACPP_TOKENS
    config.update(min_pixels=low * area, max_pixels=high * area)
    (out / "preprocessor_config.json").write_text(json.dumps(config))
    return out
