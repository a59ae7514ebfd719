"""Text to token ids and back, for a compiled model.

Wraps a `tokenizers.Tokenizer`. BOS is prepended here, from `TokenizerAssets.add_bos`, rather than
by the `tokenizer.json` post-processor, so Hugging Face and GGUF sources behave the same; the
post-processor never runs (a generation prompt must not get an EOS appended either).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import tokenizers

from mlcx.frontends.tokenizer_assets import TokenizerAssets


class Tokenizer:
    def __init__(self, assets: TokenizerAssets) -> None:
        self._assets = assets
        self._backend = tokenizers.Tokenizer.from_str(assets.tokenizer_json)

    @classmethod
    def from_dir(cls, path: str | Path) -> Tokenizer:
        """Load the `tokenizer.json` + `mlcx-tokenizer.json` pair of a compiled artifact."""
        return cls(TokenizerAssets.read(path))

    @property
    def assets(self) -> TokenizerAssets:
        return self._assets

    @property
    def backend(self) -> tokenizers.Tokenizer:
        return self._backend

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=True)

    @property
    def bos_token_id(self) -> int | None:
        return self._assets.bos_token_id

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self._assets.eos_token_ids

    @property
    def add_bos(self) -> bool:
        return self._assets.add_bos

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of `text`; special tokens written in it (`<|im_start|>`) stay whole.

        With `add_special_tokens`, BOS is prepended when the model wants one.
        """
        if not isinstance(text, str):
            raise ValueError(f"encode expects a str, got {type(text).__name__}")
        ids = self._backend.encode(text, add_special_tokens=False).ids
        if add_special_tokens and self._assets.add_bos and self._assets.bos_token_id is not None:
            return [self._assets.bos_token_id, *ids]
        return ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def id_to_token(self, token_id: int) -> str | None:
        return self._backend.id_to_token(token_id)

    def token_to_id(self, token: str) -> int | None:
        return self._backend.token_to_id(token)
