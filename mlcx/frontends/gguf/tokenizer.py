"""A `tokenizers` tokenizer rebuilt from a GGUF file's metadata.

GGUF files carry no `tokenizer.json`, only llama.cpp's `tokenizer.ggml.*` keys: the vocabulary,
merges or scores, token types and the name of the pre-tokenizer. We rebuild the tokenizer that
llama.cpp would run from them:

- `gpt2`: byte-level BPE. The pre-tokenizer (how text is split before merging) is named by
  `tokenizer.ggml.pre` and looked up in `PRE_TOKENIZERS`.
- `llama`: SentencePiece BPE with byte fallback, spelled as Llama-2/TinyLlama's `tokenizer.json`:
  a normalizer that prepends ▁ and turns spaces into ▁. As in llama.cpp, every stretch of text
  after a special token gets its own ▁ prefix.

Control (3) and unknown (2) tokens become special added tokens (matched whole, skipped when
decoding with `skip_special_tokens`); user-defined (4) ones, like `<think>`, are matched whole but
kept in decoded text, as llama.cpp and transformers do.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import BPE

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.tokenizer_assets import TokenizerAssets

logger = logging.getLogger(__name__)

_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED = 1, 2, 3, 4
_SPACE = "\u2581"

_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
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
}


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

    @classmethod
    def from_reader(cls, reader: gguf.GGUFReader) -> GGUFTokenizerMetadata:
        tokens = _required(reader, "tokenizer.ggml.tokens")
        types = _field(reader, "tokenizer.ggml.token_type") or [_NORMAL] * len(tokens)
        if len(types) != len(tokens):
            raise ModelSourceError(
                f"the GGUF file lists {len(tokens)} tokens but {len(types)} token types; "
                "the file is malformed, re-convert it"
            )
        end_ids = ("eos_token_id", "eot_token_id", "eom_token_id")
        eos = [_field(reader, f"tokenizer.ggml.{key}") for key in end_ids]
        return cls(
            model=_required(reader, "tokenizer.ggml.model"),
            pre=_field(reader, "tokenizer.ggml.pre", "default"),
            tokens=tuple(tokens),
            token_types=tuple(types),
            scores=tuple(_field(reader, "tokenizer.ggml.scores", ())),
            merges=tuple(_field(reader, "tokenizer.ggml.merges", ())),
            bos_token_id=_field(reader, "tokenizer.ggml.bos_token_id"),
            eos_token_ids=tuple(dict.fromkeys(i for i in eos if i is not None)),
            unknown_token_id=_field(reader, "tokenizer.ggml.unknown_token_id"),
            add_bos=_field(reader, "tokenizer.ggml.add_bos_token"),
            add_space_prefix=_field(reader, "tokenizer.ggml.add_space_prefix", True),
            chat_template=_field(reader, "tokenizer.chat_template"),
        )

    def token(self, token_id: int | None) -> str | None:
        in_range = token_id is not None and 0 <= token_id < len(self.tokens)
        return self.tokens[token_id] if in_range else None


def assets_from_gguf(reader: gguf.GGUFReader) -> TokenizerAssets:
    """The tokenizer, chat template and BOS/EOS that a GGUF file describes."""
    meta = GGUFTokenizerMetadata.from_reader(reader)
    if meta.model == "gpt2":
        spec = _pre_tokenizer_spec(meta.pre)
        backend, default_add_bos = _byte_level_bpe(meta, spec), spec.add_bos
    elif meta.model == "llama":
        backend, default_add_bos = _sentencepiece_bpe(meta), True
    else:
        raise UnsupportedModelError(
            f"the GGUF tokenizer model {meta.model!r} is not supported; "
            "mlcx reads 'gpt2' (byte-level BPE) and 'llama' (SentencePiece BPE) tokenizers"
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


def _field(reader: gguf.GGUFReader, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _required(reader: gguf.GGUFReader, key: str) -> Any:
    value = _field(reader, key)
    if not value:
        raise ModelSourceError(
            f"the GGUF file has no {key}, so it carries no usable tokenizer; "
            "re-convert the model with llama.cpp's convert_hf_to_gguf.py"
        )
    return value


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


def _vocab(tokens: Sequence[str]) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        vocab.setdefault(token, index)
    return vocab


def _split_merges(merges: Sequence[str]) -> list[tuple[str, str]]:
    pairs = [tuple(merge.split(" ")) for merge in merges]
    bad = next((merges[i] for i, pair in enumerate(pairs) if len(pair) != 2), None)
    if bad is not None:
        raise ModelSourceError(
            f"the GGUF merge {bad!r} is not two tokens separated by a space; "
            "the file is malformed, re-convert it"
        )
    return [(left, right) for left, right in pairs]


def _byte_level_bpe(meta: GGUFTokenizerMetadata, spec: PreTokenizerSpec) -> Tokenizer:
    if not meta.merges:
        raise ModelSourceError(
            "the GGUF file has a byte-level BPE tokenizer but no tokenizer.ggml.merges; "
            "re-convert it with llama.cpp's convert_hf_to_gguf.py"
        )
    model = BPE(
        vocab=_vocab(meta.tokens),
        merges=_split_merges(meta.merges),
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


def _sentencepiece_bpe(meta: GGUFTokenizerMetadata) -> Tokenizer:
    merges = _split_merges(meta.merges) if meta.merges else _merges_from_scores(meta)
    unk = meta.token(meta.unknown_token_id)
    model = BPE(
        vocab=_vocab(meta.tokens), merges=merges, unk_token=unk, fuse_unk=True, byte_fallback=True
    )
    backend = Tokenizer(model)
    to_space = normalizers.Replace(" ", _SPACE)
    steps: list[decoders.Decoder] = [
        decoders.Replace(_SPACE, " "),
        decoders.ByteFallback(),
        decoders.Fuse(),
    ]
    if meta.add_space_prefix:
        backend.normalizer = normalizers.Sequence([normalizers.Prepend(_SPACE), to_space])
        steps.append(decoders.Strip(" ", 1, 0))
    else:
        backend.normalizer = to_space
    backend.decoder = decoders.Sequence(steps)
    return backend


def _merges_from_scores(meta: GGUFTokenizerMetadata) -> list[tuple[str, str]]:
    """BPE merges equivalent to SentencePiece's rule: join the pair making the best-scored token.

    Every way of cutting a normal token into two vocabulary tokens is a merge, ranked by the score
    of the token it makes (then by the ids of the parts, to be deterministic).
    """
    if len(meta.scores) != len(meta.tokens):
        raise ModelSourceError(
            "the GGUF SentencePiece tokenizer has neither merges nor one score per token; "
            "the file is malformed, re-convert it"
        )
    vocab = _vocab(meta.tokens)
    ranked: list[tuple[float, int, int, str, str]] = []
    for token, score, token_type in zip(meta.tokens, meta.scores, meta.token_types, strict=True):
        if token_type != _NORMAL:
            continue
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                ranked.append((-score, vocab[left], vocab[right], left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def _add_special_tokens(backend: Tokenizer, meta: GGUFTokenizerMetadata) -> None:
    special, plain = [], []
    for token, token_type in zip(meta.tokens, meta.token_types, strict=True):
        if token_type in (_CONTROL, _UNKNOWN):
            special.append(AddedToken(token, special=True, normalized=False))
        elif token_type == _USER_DEFINED:
            plain.append(AddedToken(token, special=False, normalized=False))
    backend.add_special_tokens(special)
    backend.add_tokens(plain)
