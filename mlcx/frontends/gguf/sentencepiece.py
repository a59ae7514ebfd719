"""SentencePiece BPE vocabularies of GGUF files (tokenizer model `llama`) as `tokenizers` BPE.

Spelled as Llama-2/TinyLlama's `tokenizer.json`: a normalizer that prepends ▁ (where the file
says add_space_prefix) and turns spaces into ▁, byte fallback. As in llama.cpp, every stretch of
text after a special token gets its own ▁ prefix.

Flavors by architecture (`SPM_FLAVORS`): Gemma's files store tokens of two or more spaces as
real spaces, where its tokenizer spells them as ▁ runs, and list no merges while their scores do
not follow the merge order; the order of the tokens in the file does (as transformers reads
them). Gemma 4's (tokenizer model `gemma4`) list merges, which llama.cpp applies within lines:
text is split at newlines first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers
from tokenizers.models import BPE

from mlcx.errors import ModelSourceError
from mlcx.frontends.gguf.tokenizer_metadata import (
    NORMAL,
    GGUFTokenizerMetadata,
    split_merges,
    vocab_of,
)

_SPACE = "\u2581"


@dataclass(frozen=True)
class SpmFlavor:
    respell_spaces: bool = False  # tokens of only spaces are ▁ runs
    rank_by_position: bool = False  # merges ranked by the made token's id, not its score
    newline_split: bool = False  # runs of newlines and of other text merged apart


_GEMMA = SpmFlavor(respell_spaces=True, rank_by_position=True)
SPM_FLAVORS: dict[str, SpmFlavor] = {
    "gemma": _GEMMA,
    "gemma2": _GEMMA,
    "gemma3": _GEMMA,
    "gemma4": SpmFlavor(newline_split=True),
}


def flavored(meta: GGUFTokenizerMetadata) -> GGUFTokenizerMetadata:
    """The metadata with its architecture's token spelling."""
    if not SPM_FLAVORS.get(meta.architecture, SpmFlavor()).respell_spaces:
        return meta
    tokens = tuple(_SPACE * len(t) if t and not t.strip(" ") else t for t in meta.tokens)
    return replace(meta, tokens=tokens)


def sentencepiece_bpe(meta: GGUFTokenizerMetadata) -> Tokenizer:
    flavor = SPM_FLAVORS.get(meta.architecture, SpmFlavor())
    merges = split_merges(meta.merges) if meta.merges else _merges_from_scores(meta, flavor)
    unk = meta.token(meta.unknown_token_id)
    model = BPE(
        vocab=vocab_of(meta.tokens), merges=merges, unk_token=unk, fuse_unk=True, byte_fallback=True
    )
    backend = Tokenizer(model)
    if flavor.newline_split:
        backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[^\n]+|\n+"), behavior="isolated")
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


def _merges_from_scores(meta: GGUFTokenizerMetadata, flavor: SpmFlavor) -> list[tuple[str, str]]:
    """BPE merges equivalent to SentencePiece's rule: join the pair making the best-scored token.

    Every way of cutting a normal token into two vocabulary tokens is a merge, ranked by the score
    of the token it makes (then by the ids of the parts, to be deterministic). Ranked by position,
    every token is cut, as transformers does for those files.
    """
    if len(meta.scores) != len(meta.tokens):
        raise ModelSourceError(
            "the GGUF SentencePiece tokenizer has neither merges nor one score per token; "
            "the file is malformed, re-convert it"
        )
    vocab = vocab_of(meta.tokens)
    ranked: list[tuple[float, int, int, str, str]] = []
    for token, score, token_type in zip(meta.tokens, meta.scores, meta.token_types, strict=True):
        if token_type != NORMAL and not flavor.rank_by_position:
            continue
        rank = vocab[token] if flavor.rank_by_position else -score
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                ranked.append((rank, vocab[left], vocab[right], left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]
