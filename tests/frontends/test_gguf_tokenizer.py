import json
import logging
import random
import re
from pathlib import Path

import gguf
import numpy as np
import pytest
import tokenizers
from tokenizers import models, pre_tokenizers, trainers

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.gguf.tokenizer import assets_from_gguf
from mlcx.runtime.text.chat_template import ChatTemplate
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.default_model import default_gguf

CORPUS = [
    "Hello world, this is a tiny corpus for testing tokenizers. I'm sure we'll see.",
    "Numbers 2024 and 3.14159 and 12345; caf\u00e9 na\u00efve \u4e2d\u6587 emoji!",
    "def main():\n    return 42  # the answer\n\n",
] * 30
CHATML = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
ALPHABET = "abcXYZ  '\n\t.,!?-0123456789\u00e9\u4e2d\u6587\U0001f600\u03a9"
FIXED = [
    "Hello world",
    "I'M sure we'll",
    "x  \n\n  y",
    "3.14159 + 12345",
    "\u4e2d\u6587\U0001f600!",
]


def random_texts(seed: int, count: int = 150) -> list[str]:
    rng = random.Random(seed)
    return FIXED + ["".join(rng.choices(ALPHABET, k=rng.randint(1, 30))) for _ in range(count)]


def trained(pre_tokenizer, size: int, specials: list[str]) -> tuple[list[str], list[str]]:
    """Tokens in id order and merges ("a b") of a BPE trained on CORPUS."""
    backend = tokenizers.Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizer
    alphabet = pre_tokenizers.ByteLevel.alphabet() if specials else []
    trainer = trainers.BpeTrainer(
        vocab_size=size, special_tokens=specials, initial_alphabet=alphabet, show_progress=False
    )
    backend.train_from_iterator(CORPUS, trainer)
    model = json.loads(backend.to_str())["model"]
    return sorted(model["vocab"], key=model["vocab"].get), [" ".join(m) for m in model["merges"]]


@pytest.fixture(scope="module")
def byte_level_vocab():
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"]
    tokens, merges = trained(pre_tokenizers.ByteLevel(add_prefix_space=False), 420, specials)
    types = [3, 3, 3, 4] + [1] * (len(tokens) - 4)
    return tokens, types, merges


@pytest.fixture(scope="module")
def sentencepiece_vocab():
    pieces, merges = trained(pre_tokenizers.Metaspace(), 260, [])
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), "<|im_start|>"]
    types = [2, 3, 3] + [6] * 256 + [3] + [1] * len(pieces)
    scores = [0.0] * len(tokens) + [-float(rank) for rank in range(len(pieces))]
    return tokens + pieces, types, scores, merges


def write_gguf(path: Path, tokenizer_model: str, tokens, types, **keys) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_feed_forward_length(16)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model(tokenizer_model)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    for key, value in keys.items():
        if value is not None:
            getattr(writer, f"add_{key}")(value)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def byte_level_gguf(tmp_path, vocab, pre, **keys) -> Path:
    tokens, types, merges = vocab
    defaults = {"token_merges": merges, "tokenizer_pre": pre, "bos_token_id": 0}
    return write_gguf(tmp_path / f"{pre}.gguf", "gpt2", tokens, types, **{**defaults, **keys})


def load(path: Path) -> tuple[Tokenizer, object]:
    from transformers import AutoTokenizer

    ours = Tokenizer(assets_from_gguf(gguf.GGUFReader(str(path))))
    return ours, AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def assert_same_tokens(ours: Tokenizer, reference, texts: list[str]) -> None:
    for text in texts:
        ids = ours.encode(text, add_special_tokens=True)
        assert ids == reference.encode(text), text
        assert ours.decode(ids) == reference.decode(ids, skip_special_tokens=True), text


@pytest.mark.parametrize("pre", ["default", "qwen2", "llama-bpe"])
def test_byte_level_matches_transformers(tmp_path, byte_level_vocab, pre):
    ours, reference = load(byte_level_gguf(tmp_path, byte_level_vocab, pre, add_bos_token=False))
    specials = ["<|im_start|>user\nhi<|im_end|>", "a<think>b</think>"]
    assert_same_tokens(ours, reference, random_texts(1) + specials)


@pytest.mark.parametrize(
    ("pre", "pieces"),
    [("qwen2", ["1", "2", "3", "4", "5"]), ("llama3", ["123", "45"]), ("default", ["12345"])],
)
def test_pre_tokenizer_regex_is_applied(tmp_path, byte_level_vocab, pre, pieces):
    path = byte_level_gguf(tmp_path, byte_level_vocab, pre)
    ours = Tokenizer(assets_from_gguf(gguf.GGUFReader(str(path))))
    split = ours.backend.pre_tokenizer.pre_tokenize_str("12345 ab")
    assert [piece for piece, _ in split] == [*pieces, "\u0120ab"]


def test_smollm_splits_digits_individually(tmp_path, byte_level_vocab):
    ours, reference = load(byte_level_gguf(tmp_path, byte_level_vocab, "smollm"))
    no_digits = [re.sub(r"\d", "", text) for text in random_texts(2)]
    assert_same_tokens(ours, reference, [text for text in no_digits if text])
    text = "Numbers 2024 and 12345"
    assert len(reference.encode("12345", add_special_tokens=False)) < 5  # merged in the vocab
    pieces = [ours.id_to_token(i) for i in ours.encode(text)]
    assert pieces[-5:] == list("12345")
    assert all(not re.search(r"\d", p) or re.fullmatch(r"\d", p) for p in pieces)
    assert ours.decode(ours.encode(text)) == text


def test_unknown_pre_tokenizer_warns_and_uses_gpt2(tmp_path, byte_level_vocab, caplog):
    path = byte_level_gguf(tmp_path, byte_level_vocab, "something-new")
    with caplog.at_level(logging.WARNING):
        ours = Tokenizer(assets_from_gguf(gguf.GGUFReader(str(path))))
    assert "something-new" in caplog.text
    default = byte_level_gguf(tmp_path, byte_level_vocab, "default")
    gpt2 = Tokenizer(assets_from_gguf(gguf.GGUFReader(str(default))))
    assert all(ours.encode(t) == gpt2.encode(t) for t in random_texts(3))


def test_special_and_user_defined_tokens(tmp_path, byte_level_vocab):
    ours, _ = load(byte_level_gguf(tmp_path, byte_level_vocab, "default"))
    ids = ours.encode("<|im_start|>x<think>y<|im_end|>")
    assert ids[0] == 1 and ids[-1] == 2 and 3 in ids
    assert ours.decode(ids) == "x<think>y"
    assert ours.decode(ids, skip_special_tokens=False) == "<|im_start|>x<think>y<|im_end|>"


def test_metadata_and_chat_template(tmp_path, byte_level_vocab):
    path = byte_level_gguf(
        tmp_path,
        byte_level_vocab,
        "default",
        bos_token_id=1,
        eos_token_id=2,
        eot_token_id=0,
        add_bos_token=True,
        chat_template=CHATML,
    )
    assets = assets_from_gguf(gguf.GGUFReader(str(path)))
    assert (assets.bos_token_id, assets.bos_token, assets.add_bos) == (1, "<|im_start|>", True)
    assert (assets.eos_token_ids, assets.eos_token) == ((2, 0), "<|im_end|>")
    ours, reference = load(path)
    assert ours.encode("hi", add_special_tokens=True) == reference.encode("hi")
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
    rendered = ChatTemplate(assets.chat_template, assets.bos_token, assets.eos_token).render(
        messages
    )
    want = reference.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == want


@pytest.mark.parametrize("with_merges", [False, True])
def test_sentencepiece_matches_transformers(tmp_path, sentencepiece_vocab, with_merges):
    tokens, types, scores, merges = sentencepiece_vocab
    path = write_gguf(
        tmp_path / "spm.gguf",
        "llama",
        tokens,
        types,
        token_scores=scores,
        token_merges=merges if with_merges else None,
        bos_token_id=1,
        eos_token_id=2,
        unk_token_id=0,
    )
    ours, reference = load(path)
    # transformers prefixes only the very start of the text with ▁ (Metaspace "first");
    # llama.cpp, and we, also prefix text after each special token and keep leading spaces.
    texts = [text.lstrip() for text in random_texts(4)]
    assert_same_tokens(ours, reference, [text for text in texts if text])
    assert ours.add_bos and ours.encode("a", add_special_tokens=True)[0] == 1
    assert any(ours.id_to_token(i).startswith("<0x") for i in ours.encode("\U0001f600"))


def test_sentencepiece_prefixes_text_after_special_tokens(tmp_path, sentencepiece_vocab):
    tokens, types, scores, _ = sentencepiece_vocab
    path = write_gguf(tmp_path / "spm.gguf", "llama", tokens, types, token_scores=scores)
    ours = Tokenizer(assets_from_gguf(gguf.GGUFReader(str(path))))
    pieces = [ours.id_to_token(i) for i in ours.encode("<|im_start|>Hello world")]
    assert pieces[0] == "<|im_start|>" and pieces[1].startswith("\u2581")
    assert ours.decode(ours.encode("Hello  world")) == "Hello  world"


def test_unsupported_tokenizer_model_is_named(tmp_path):
    path = write_gguf(tmp_path / "bert.gguf", "bert", ["[CLS]", "a"], [3, 1])
    with pytest.raises(UnsupportedModelError, match="'bert'"):
        assets_from_gguf(gguf.GGUFReader(str(path)))


def test_missing_vocabulary_or_merges_is_a_model_source_error(tmp_path, byte_level_vocab):
    writer = gguf.GGUFWriter(str(tmp_path / "empty.gguf"), "llama")
    writer.add_tensor("x", np.zeros(2, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelSourceError, match="tokenizer.ggml.tokens"):
        assets_from_gguf(gguf.GGUFReader(str(tmp_path / "empty.gguf")))
    tokens, types, _ = byte_level_vocab
    path = write_gguf(tmp_path / "nomerges.gguf", "gpt2", tokens, types)
    with pytest.raises(ModelSourceError, match="merges"):
        assets_from_gguf(gguf.GGUFReader(str(path)))


@pytest.mark.slow
def test_smollm2_gguf_matches_transformers():
    # the default preset's file: downloaded on first use, and a failed download fails the test
    ours, reference = load(default_gguf())
    texts = [re.sub(r"\d", "", text) for text in random_texts(5, count=100)]
    texts += ["<|im_start|>user\nWhat is the capital of France?<|im_end|>\n", "  spaced\n\n\tout "]
    assert_same_tokens(ours, reference, [text for text in texts if text])
    assert [ours.id_to_token(i) for i in ours.encode("2024")] == list("2024")
    assert ours.eos_token_ids == (2,) and not ours.add_bos
    conversations = [
        [{"role": "user", "content": "Hi!"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
    ]
    template = ChatTemplate.of(ours.assets)
    for messages in conversations:
        want = reference.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert template.render(messages) == want
