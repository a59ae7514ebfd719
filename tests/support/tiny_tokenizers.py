"""Byte-level BPE tokenizers trained in-test on a small corpus (no hub downloads)."""

from __future__ import annotations

from collections.abc import Sequence

import tokenizers
from tokenizers import decoders, models, pre_tokenizers, trainers


def train_byte_level_bpe(
    corpus: Sequence[str], specials: Sequence[str], vocab_size: int
) -> tokenizers.Tokenizer:
    backend = tokenizers.Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer)
    return backend
