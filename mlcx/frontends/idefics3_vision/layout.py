"""Where an image's tokens go in an Idefics3 prompt: the chat template writes `<image>`, and
Idefics3Processor replaces it, for a single global tile, with
<fake_token_around_image><global-img>, one <image> per row, <fake_token_around_image>."""

from __future__ import annotations

from typing import Any

import tokenizers

FAKE, GLOBAL = "<fake_token_around_image>", "<global-img>"


def image_text(backend: tokenizers.Tokenizer, cfg: Any) -> tuple[str, str]:
    token = backend.id_to_token(cfg.image_token_id)
    if not token or backend.token_to_id(FAKE) is None:
        return "", ""
    return token, f"{FAKE}{GLOBAL}{token * cfg.tokens_per_image}{FAKE}"
