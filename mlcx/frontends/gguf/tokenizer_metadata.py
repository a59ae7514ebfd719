"""The `tokenizer.*` keys of a GGUF file, read once (llama.cpp's names and token types)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gguf

from mlcx.errors import ModelSourceError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED = 1, 2, 3, 4
# Replies that end at a token the metadata does not name: gpt-oss's harmony vocabulary ends a
# reply at `<|return|>` and at `<|call|>` (a tool call), while its files name one eos; llama.cpp
# finds both by their text (llama-vocab.cpp) and so does this
ENDS_BY_TEXT = ("<|return|>", "<|call|>")


@dataclass(frozen=True)
class GGUFTokenizerMetadata:
    """The `tokenizer.*` keys of a GGUF file that a tokenizer is built from."""

    model: str
    pre: str
    tokens: tuple[str, ...]
    token_types: tuple[int, ...]
    scores: tuple[float, ...]
    merges: tuple[str, ...]
    bos_token_id: int | None
    eos_token_ids: tuple[int, ...]
    unknown_token_id: int | None
    add_bos: bool | None
    add_space_prefix: bool
    chat_template: str | None
    architecture: str  # the model's (general.architecture): some vocabularies need its quirks

    @classmethod
    def from_reader(cls, reader: gguf.GGUFReader) -> GGUFTokenizerMetadata:
        tokens = _required(reader, "tokenizer.ggml.tokens")
        types = field_of(reader, "tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
        if len(types) != len(tokens):
            raise ModelSourceError(
                f"the GGUF file lists {len(tokens)} tokens but {len(types)} token types; "
                "the file is malformed, re-convert it"
            )
        end_ids = ("eos_token_id", "eot_token_id", "eom_token_id")
        eos = [field_of(reader, f"tokenizer.ggml.{key}") for key in end_ids]
        eos += _ends_by_text(tokens, types)
        return cls(
            model=_required(reader, "tokenizer.ggml.model"),
            pre=field_of(reader, "tokenizer.ggml.pre", "default"),
            tokens=tuple(tokens),
            token_types=tuple(types),
            scores=tuple(field_of(reader, "tokenizer.ggml.scores", ())),
            merges=tuple(field_of(reader, "tokenizer.ggml.merges", ())),
            bos_token_id=field_of(reader, "tokenizer.ggml.bos_token_id"),
            eos_token_ids=tuple(dict.fromkeys(i for i in eos if i is not None)),
            unknown_token_id=field_of(reader, "tokenizer.ggml.unknown_token_id"),
            add_bos=field_of(reader, "tokenizer.ggml.add_bos_token"),
            add_space_prefix=field_of(reader, "tokenizer.ggml.add_space_prefix", True),
            chat_template=field_of(reader, "tokenizer.chat_template"),
            architecture=str(field_of(reader, "general.architecture", "")),
        )

    def token(self, token_id: int | None) -> str | None:
        in_range = token_id is not None and 0 <= token_id < len(self.tokens)
        return self.tokens[token_id] if in_range else None


def _ends_by_text(tokens: Sequence[str], types: Sequence[int]) -> list[int]:
    """The ids of ENDS_BY_TEXT where the vocabulary has all of them as control tokens."""
    found = {t: i for i, t in enumerate(tokens) if t in ENDS_BY_TEXT and types[i] == CONTROL}
    return [found[t] for t in ENDS_BY_TEXT] if len(found) == len(ENDS_BY_TEXT) else []


def field_of(reader: gguf.GGUFReader, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _required(reader: gguf.GGUFReader, key: str) -> Any:
    value = field_of(reader, key)
    if not value:
        raise ModelSourceError(
            f"the GGUF file has no {key}, so it carries no usable tokenizer; "
            "re-convert the model with llama.cpp's convert_hf_to_gguf.py"
        )
    return value


def vocab_of(tokens: Sequence[str]) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        vocab.setdefault(token, index)
    return vocab


def split_merges(merges: Sequence[str]) -> list[tuple[str, str]]:
    pairs = [tuple(merge.split(" ")) for merge in merges]
    bad = next((merges[i] for i, pair in enumerate(pairs) if len(pair) != 2), None)
    if bad is not None:
        raise ModelSourceError(
            f"the GGUF merge {bad!r} is not two tokens separated by a space; "
            "the file is malformed, re-convert it"
        )
    return [(left, right) for left, right in pairs]
