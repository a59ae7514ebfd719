"""Tiny random embedding models in Hugging Face format, built by the tests themselves: a BERT
encoder with a WordPiece tokenizer ([CLS] text [SEP]), and a Qwen3 decoder saved as a bare
Qwen3Model whose tokenizer appends <|endoftext|> (as Qwen3-Embedding's does). A
sentence-transformers `modules.json` (+ pooling config, + Normalize) is written when asked."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import tokenizers
from tokenizers import models, normalizers, pre_tokenizers, processors

from tests.support.tiny_models import CORPUS

BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CONTEXT = 64


def _wordpiece(size: int = 300) -> tokenizers.Tokenizer:
    """A WordPiece over CORPUS: every character alone and as a "##" piece, the commonest
    words, the commonest two- and three-letter pieces inside words ("##") and at their starts,
    as a trained one has. Built, not trained: tokenizers' WordPieceTrainer breaks ties in
    hash-map order, so its vocabulary differs from process to process, and the tests' artifact
    cache keys a model by its files."""
    normalizer, splitter = (
        normalizers.BertNormalizer(lowercase=True),
        pre_tokenizers.BertPreTokenizer(),
    )
    words = Counter(
        word
        for text in CORPUS
        for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text))
    )
    chars = sorted({c for word in words for c in word})
    starts = Counter(w[:n] for w in words.elements() for n in (2, 3) if len(w) > n)
    inner = Counter(
        w[i : i + n] for w in words.elements() for n in (2, 3) for i in range(1, len(w) - n + 1)
    )
    vocab = [*BERT_SPECIALS, *chars, *(f"##{c}" for c in chars)]
    vocab += _commonest(words, 60, 2)
    vocab += [piece for piece in _commonest(starts, 60, 2) if piece not in vocab]
    vocab += [f"##{piece}" for piece in _commonest(inner, size - len(vocab), 2)]
    backend = tokenizers.Tokenizer(
        models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]")
    )
    backend.normalizer, backend.pre_tokenizer = normalizer, splitter
    backend.add_special_tokens(BERT_SPECIALS)  # "[CLS]" in a text is the token, as trained
    cls, sep = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return backend


def _commonest(counts: Counter, n: int, shortest: int) -> list[str]:
    """The `n` commonest keys at least `shortest` long, ties in alphabetical order."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [key for key, _ in ranked if len(key) >= shortest][:n]


def _bpe_with_eos() -> tokenizers.Tokenizer:
    from tests.support.tiny_tokenizers import train_byte_level_bpe

    backend = train_byte_level_bpe(CORPUS, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], 384)
    eos = backend.token_to_id("<|endoftext|>")
    backend.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", eos)]
    )
    return backend


def write_sentence_transformers(folder: Path, mode: str, normalize: bool) -> None:
    flags = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token"}
    flags["last"] = "pooling_mode_lasttoken"
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    if normalize:
        modules.append(
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            }
        )
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    pooling = {flag: flag == flags[mode] for flag in flags.values()}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))


def _randomized(model, seed: int):
    import torch

    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.08)
    return model.eval()


def make_tiny_bert(folder: Path, seed: int = 0) -> Path:
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True, exist_ok=True)
    backend = _wordpiece()
    backend.save(str(folder / "tokenizer.json"))
    config = BertConfig(
        vocab_size=backend.get_vocab_size(),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=CONTEXT,
    )
    model = _randomized(BertModel(config, add_pooling_layer=False), seed)
    with __import__("torch").no_grad():  # unit-scale LayerNorms, so every layer matters
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.add_(1.0)
    model.save_pretrained(folder)
    return folder


def make_tiny_qwen3_embedding(folder: Path, seed: int = 0) -> Path:
    from transformers import Qwen3Config, Qwen3Model

    folder.mkdir(parents=True, exist_ok=True)
    backend = _bpe_with_eos()
    backend.save(str(folder / "tokenizer.json"))
    config = Qwen3Config(
        vocab_size=backend.get_vocab_size(),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        intermediate_size=128,
        max_position_embeddings=CONTEXT,
    )
    model = _randomized(Qwen3Model(config), seed)
    import torch

    with torch.no_grad():  # unit-scale norms: attention far from uniform
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(1.0)
    model.save_pretrained(folder)
    return folder


def _bert_st_cls(folder: Path) -> Path:
    make_tiny_bert(folder, seed=2)
    write_sentence_transformers(folder, "cls", normalize=True)
    return folder


# name -> how its folder is made: a bare BertModel (mean pooling by default), a
# sentence-transformers BERT pooling by CLS and normalizing, a bare Qwen3Model
EMBEDDERS = {
    "bert": lambda folder: make_tiny_bert(folder, seed=1),
    "bert-st-cls": _bert_st_cls,
    "qwen3": lambda folder: make_tiny_qwen3_embedding(folder, seed=3),
}
