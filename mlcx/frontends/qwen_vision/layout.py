"""Where an image's tokens go in a Qwen-VL prompt: the chat template writes
<|vision_start|><|image_pad|><|vision_end|>, and the processor repeats <|image_pad|> once per
merged token of the image (runtime.vision.layout), so the marker and its text per token are
both <|image_pad|>."""

from __future__ import annotations

from typing import Any

import tokenizers


def image_text(backend: tokenizers.Tokenizer, cfg: Any) -> tuple[str, str]:
    token = backend.id_to_token(cfg.image_token_id)
    return (token, token) if token else ("", "")
