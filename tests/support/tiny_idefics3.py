"""A tiny random Idefics3ForConditionalGeneration folder written by transformers: a 32x32
SigLIP tower (8x8 patches, 2 layers), pixel shuffle by 2 (4 tokens an image), a 2-layer Llama,
a BPE tokenizer with Idefics3's image tokens, a chat template whose image parts become
<image>, and a preprocessor_config.json (64-pixel longest edge, 32-pixel tiles)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.tiny_models import CORPUS
from tests.support.tiny_tokenizers import train_byte_level_bpe

FAKE, GLOBAL, IMAGE = "<fake_token_around_image>", "<global-img>", "<image>"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", FAKE, GLOBAL, IMAGE]
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    + IMAGE
    + "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TILE = 32
TOKENS_PER_IMAGE = 4


# transformers' classes of each kind: (config, model, image processor)
KINDS = {
    "idefics3": ("Idefics3Config", "Idefics3ForConditionalGeneration", "Idefics3ImageProcessor"),
    "smolvlm": ("SmolVLMConfig", "SmolVLMForConditionalGeneration", "SmolVLMImageProcessor"),
}


def classes(kind: str):
    import transformers

    return tuple(getattr(transformers, name) for name in KINDS[kind])


def make_tiny_idefics3(
    folder: Path, seed: int = 41, kind: str = "idefics3", split: bool = True
) -> Path:
    """`split`: the processor splits images into tiles plus a global image (the default of
    real checkpoints); else each image is one global tile."""
    import torch

    config_cls, model_cls, processor_cls = classes(kind)

    folder.mkdir(parents=True, exist_ok=True)
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 384)
    backend.save(str(folder / "tokenizer.json"))
    config = {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "chat_template": TEMPLATE}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    text = dict(
        model_type="llama",
        vocab_size=backend.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=2,
        pad_token_id=0,
    )
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=TILE,
        patch_size=8,
    )
    cfg = config_cls(
        text_config=text,
        vision_config=vision,
        scale_factor=2,
        image_token_id=backend.token_to_id(IMAGE),
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = model_cls(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.1)
    model.eval().save_pretrained(folder)
    processor = processor_cls(
        size={"longest_edge": 2 * TILE},
        max_image_size={"longest_edge": TILE},
        do_image_splitting=split,
    )
    processor.save_pretrained(folder)
    return folder


# SmolVLM's released config.json names its text model's class under text_config; llama.cpp's
# converter takes a VL folder's text side by that name (VLlama3ForCausalLM: as a Llama)
TEXT_ARCH = "VLlama3ForCausalLM"


def gguf_pair(folder: Path, root: Path) -> tuple[Path, Path]:
    """(text GGUF, mmproj GGUF) of the Idefics3 folder, both written by llama.cpp's own
    convert_hf_to_gguf.py (f32), from a copy whose config.json reads as SmolVLM's do."""
    from tests.support.llamacpp_convert import convert

    released = root / "hf"
    if not released.exists():
        shutil.copytree(folder, released)
        config = json.loads((released / "config.json").read_text())
        config["text_config"]["architectures"] = [TEXT_ARCH]
        (released / "config.json").write_text(json.dumps(config, indent=2))
    return convert(released, root / "text.gguf"), convert(
        released, root / "mmproj.gguf", mmproj=True
    )
