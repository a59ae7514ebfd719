"""Where an image's tokens go in a Gemma 3 prompt: the chat template writes <start_of_image>,
and Gemma3Processor replaces it with its full image sequence: a blank line, <start_of_image>,
one <image_soft_token> per row, <end_of_image>, a blank line."""

from __future__ import annotations

from typing import Any

import tokenizers


def image_text(backend: tokenizers.Tokenizer, cfg: Any) -> tuple[str, str]:
    """(the marker the chat template writes, the text it becomes); empty where the tokenizer
    lacks the image tokens."""
    token, boi, eoi = (
        backend.id_to_token(i) for i in (cfg.image_token_id, cfg.boi_token_id, cfg.eoi_token_id)
    )
    if not token or not boi or not eoi:
        return "", ""
    return boi, f"\n\n{boi}{token * cfg.tokens_per_image}{eoi}\n\n"
