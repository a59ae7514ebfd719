"""A `tokenizers` tokenizer rebuilt from a GGUF file's metadata.

GGUF files carry no `tokenizer.json`, only llama.cpp's `tokenizer.ggml.*` keys: the vocabulary,
merges or scores, token types and the name of the pre-tokenizer. We rebuild the tokenizer that
llama.cpp would run from them:

- `gpt2`: byte-level BPE. The pre-tokenizer (how text is split before merging) is named by
  `tokenizer.ggml.pre` and looked up in `PRE_TOKENIZERS`.
- `llama`: SentencePiece BPE with byte fallback (mlcx.frontends.gguf.sentencepiece, with the
  quirks of Gemma's files); `gemma4`: the same, with merges, split at newlines.

Control (3) and unknown (2) tokens become special added tokens (matched whole, skipped when
decoding with `skip_special_tokens`); user-defined (4) ones, like `<think>`, are matched whole but
kept in decoded text, as llama.cpp and transformers do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers
from tokenizers.models import BPE

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.gguf.sentencepiece import flavored, sentencepiece_bpe
from mlcx.frontends.gguf.tokenizer_metadata import (
    CONTROL,
    UNKNOWN,
    USER_DEFINED,
    GGUFTokenizerMetadata,
    split_merges,
    vocab_of,
)
from mlcx.frontends.tokenizer_assets import TokenizerAssets

logger = logging.getLogger(__name__)


_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# OpenAI's o200k split (tokenizer.json of GPT-4o and Phi-4-mini; llama.cpp's `gpt-4o`): a word is
# its capitals then its lower-case letters (CamelCase splits), contractions stay on the word,
# digits go in runs of up to three, and a punctuation run keeps its newlines and slashes.
_O200K_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@dataclass(frozen=True)
class PreTokenizerSpec:
    """How a byte-level BPE vocabulary splits text before merging.

    `split_regex` None means GPT-2's regex (built into the ByteLevel pre-tokenizer).
    `ignore_merges`: a piece that is a whole vocabulary token is kept as is (llama.cpp's llama3).
    `add_bos` is the default for files without `tokenizer.ggml.add_bos_token`.
    """

    split_regex: str | None = None
    individual_digits: bool = False
    ignore_merges: bool = False
    add_bos: bool = False


_GPT2 = PreTokenizerSpec()
# llama.cpp splits every digit on its own, then applies GPT-2's regex; SmolLM's tokenizer.json
# says the same (Digits(individual_digits) + ByteLevel).
_DIGITS_THEN_GPT2 = PreTokenizerSpec(individual_digits=True)
_LLAMA3 = PreTokenizerSpec(split_regex=_LLAMA3_SPLIT, ignore_merges=True, add_bos=True)
_QWEN2 = PreTokenizerSpec(split_regex=_QWEN2_SPLIT)
_O200K = PreTokenizerSpec(split_regex=_O200K_SPLIT)

PRE_TOKENIZERS: dict[str, PreTokenizerSpec] = {
    "default": _GPT2,
    "gpt2": _GPT2,
    "gpt-2": _GPT2,
    "smollm": _DIGITS_THEN_GPT2,
    "starcoder": _DIGITS_THEN_GPT2,
    "refact": _DIGITS_THEN_GPT2,
    "llama3": _LLAMA3,
    "llama-v3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "qwen2": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
    "gpt-4o": _O200K,  # Phi-4-mini's files
}


def assets_from_gguf(reader: gguf.GGUFReader) -> TokenizerAssets:
    """The tokenizer, chat template and BOS/EOS that a GGUF file describes."""
    meta = GGUFTokenizerMetadata.from_reader(reader)
    if meta.model == "gpt2":
        spec = _pre_tokenizer_spec(meta.pre)
        backend, default_add_bos = _byte_level_bpe(meta, spec), spec.add_bos
    elif meta.model in ("llama", "gemma4"):
        meta = flavored(meta)  # the added tokens below too
        backend, default_add_bos = sentencepiece_bpe(meta), True
    else:
        raise UnsupportedModelError(
            f"the GGUF tokenizer model {meta.model!r} is not supported; "
            "mlcx reads 'gpt2' (byte-level BPE), 'llama' and 'gemma4' (SentencePiece BPE) "
            "tokenizers"
        )
    _add_special_tokens(backend, meta)
    add_bos = default_add_bos if meta.add_bos is None else meta.add_bos
    return TokenizerAssets(
        tokenizer_json=backend.to_str(),
        chat_template=meta.chat_template,
        bos_token_id=meta.bos_token_id,
        eos_token_ids=meta.eos_token_ids,
        add_bos=add_bos and meta.bos_token_id is not None,
        bos_token=meta.token(meta.bos_token_id),
        eos_token=meta.token(meta.eos_token_ids[0] if meta.eos_token_ids else None),
    )


def _pre_tokenizer_spec(pre: str) -> PreTokenizerSpec:
    spec = PRE_TOKENIZERS.get(pre)
    if spec is None:
        logger.warning(
            "GGUF pre-tokenizer %r is unknown to mlcx; splitting text like GPT-2, which may "
            "tokenize some text differently from llama.cpp (known: %s)",
            pre,
            ", ".join(sorted(PRE_TOKENIZERS)),
        )
        return _GPT2
    return spec


def _byte_level_bpe(meta: GGUFTokenizerMetadata, spec: PreTokenizerSpec) -> Tokenizer:
    if not meta.merges:
        raise ModelSourceError(
            "the GGUF file has a byte-level BPE tokenizer but no tokenizer.ggml.merges; "
            "re-convert it with llama.cpp's convert_hf_to_gguf.py"
        )
    model = BPE(
        vocab=vocab_of(meta.tokens),
        merges=split_merges(meta.merges),
        ignore_merges=spec.ignore_merges,
    )
    backend = Tokenizer(model)
    backend.pre_tokenizer = _byte_level_pre_tokenizer(spec)
    backend.decoder = decoders.ByteLevel()
    return backend


def _byte_level_pre_tokenizer(spec: PreTokenizerSpec) -> pre_tokenizers.PreTokenizer:
    steps: list[pre_tokenizers.PreTokenizer] = []
    if spec.individual_digits:
        steps.append(pre_tokenizers.Digits(individual_digits=True))
    if spec.split_regex is not None:
        steps.append(pre_tokenizers.Split(Regex(spec.split_regex), behavior="isolated"))
    use_gpt2_regex = spec.split_regex is None
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=use_gpt2_regex))
    return pre_tokenizers.Sequence(steps)


def _add_special_tokens(backend: Tokenizer, meta: GGUFTokenizerMetadata) -> None:
    special, plain = [], []
    for token, token_type in zip(meta.tokens, meta.token_types, strict=True):
        if token_type in (CONTROL, UNKNOWN):
            special.append(AddedToken(token, special=True, normalized=False))
        elif token_type == USER_DEFINED:
            plain.append(AddedToken(token, special=False, normalized=False))
    backend.add_special_tokens(special)
    backend.add_tokens(plain)
