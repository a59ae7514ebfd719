import json
import random

import pytest
from tokenizers import processors

from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.text.chat_template import ChatTemplate
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.tiny_tokenizers import train_byte_level_bpe

CORPUS = [
    "hello world, this is a tiny corpus 12345 for testing tokenizers.",
    "Numbers 2024 and 3.14159; caf\u00e9 na\u00efve \u4e2d\u6587 \U0001f600 emoji!\n\tdone",
] * 30
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXTS = [
    "hello world",
    " leading space and trailing ",
    "<|im_start|>user\nhi there<|im_end|>\n",
    "digits 0123456789 and 3.14",
    "caf\u00e9 \u4e2d\u6587 \U0001f600\U0001f389 \u03a9",
    "tabs\tand\n\nnew lines\r\n",
    "",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 320)
    backend.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)]
    )
    path = tmp_path_factory.mktemp("hf")
    backend.save(str(path / "tokenizer.json"))
    config = {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "chat_template": "x"}
    (path / "tokenizer_config.json").write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def ours(folder):
    return Tokenizer(TokenizerAssets.from_hf_folder(folder))


@pytest.fixture(scope="module")
def reference(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def random_texts(count: int) -> list[str]:
    rng = random.Random(3)
    alphabet = "abc xyz 019.,!?\n\t\u00e9\u4e2d\U0001f600" + "".join(SPECIALS)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(count)]


def test_encode_matches_transformers(ours, reference):
    for text in TEXTS + random_texts(200):
        assert ours.encode(text, add_special_tokens=True) == reference.encode(text), text
        expected = reference.encode(text, add_special_tokens=False)
        assert ours.encode(text) == expected, text


def test_decode_matches_transformers(ours, reference):
    for text in TEXTS + random_texts(200):
        ids = reference.encode(text)
        assert ours.decode(ids) == reference.decode(ids, skip_special_tokens=True)
        assert ours.decode(ids, skip_special_tokens=False) == reference.decode(ids)


def test_special_tokens_stay_whole(ours):
    ids = ours.encode("<|im_start|>user")
    assert ids[0] == ours.token_to_id("<|im_start|>") == 1
    assert ours.id_to_token(1) == "<|im_start|>"
    assert ours.token_to_id("not a token") is None


def test_bos_added_only_with_special_tokens(ours):
    assert ours.bos_token_id == 0
    assert ours.encode("hi", add_special_tokens=True) == [0, *ours.encode("hi")]
    assert ours.encode("") == []


def test_vocab_and_eos(ours, reference):
    assert ours.vocab_size == len(reference)
    assert ours.eos_token_ids == (reference.eos_token_id,)


def test_encode_rejects_non_text(ours):
    with pytest.raises(ValueError, match="str"):
        ours.encode([1, 2])  # type: ignore[arg-type]


def test_chat_template_comes_from_assets(ours):
    template = ChatTemplate.of(ours.assets)
    assert template.source == "x"
    assert template.bos_token == "<|endoftext|>"
