"""A tiny random Gemma3ForConditionalGeneration folder, written by the tests with transformers:
a 32x32 SigLIP tower (8x8 patches, 2 layers), a 2x2 pooling projector (4 tokens an image), a
2-layer Gemma 3 text model (one local, one global layer), a BPE tokenizer with Gemma's image
tokens, a chat template whose image parts become <start_of_image>, and the model's
preprocessor_config.json."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.tiny_models import CORPUS
from tests.support.tiny_tokenizers import train_byte_level_bpe

BOI, EOI, IMAGE = "<start_of_image>", "<end_of_image>", "<image_soft_token>"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", BOI, EOI, IMAGE]
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    + BOI
    + "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IMAGE_SIZE = 32
TOKENS_PER_IMAGE = 4


def _tokenizer(folder: Path) -> dict[str, int]:
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 384)
    backend.save(str(folder / "tokenizer.json"))
    config = {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "chat_template": TEMPLATE}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    ids = {name: backend.token_to_id(name) for name in (BOI, EOI, IMAGE)}
    return {"vocab": backend.get_vocab_size(), **ids}


def _config(ids: dict[str, int], window: int):
    from transformers import Gemma3Config

    text = dict(
        vocab_size=ids["vocab"],
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
        sliding_window=window,
        layer_types=["sliding_attention", "full_attention"],
        query_pre_attn_scalar=16,
        bos_token_id=0,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,  # a tied head predicts the last token again and again
    )
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=IMAGE_SIZE,
        patch_size=8,
        vision_use_head=False,
    )
    return Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=TOKENS_PER_IMAGE,
        image_token_index=ids[IMAGE],
        boi_token_index=ids[BOI],
        eoi_token_index=ids[EOI],
        tie_word_embeddings=False,
    )


def make_tiny_gemma3_vision(folder: Path, seed: int = 31, window: int = 128) -> Path:
    import torch
    from transformers import Gemma3ForConditionalGeneration, Gemma3ImageProcessor

    folder.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(folder)
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(_config(ids, window))
    with torch.no_grad():  # the projection starts at zero: draw every weight
        for p in model.parameters():
            p.normal_(0.0, 0.1)
    model.eval().save_pretrained(folder)
    size = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    Gemma3ImageProcessor(size=size).save_pretrained(folder)
    return folder


def load_vision_reference(folder: Path):
    from transformers import Gemma3ForConditionalGeneration

    return Gemma3ForConditionalGeneration.from_pretrained(folder, dtype="float32").eval()
