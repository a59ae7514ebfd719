import json
import random

import pytest
import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.text.detokenizer import IncrementalDetokenizer
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.tiny_tokenizers import train_byte_level_bpe

# Frequent enough to get merged, so other multi-byte characters stay split across byte tokens.
CORPUS = [
    "The quick brown fox jumps over the lazy dog. caf\u00e9 na\u00efve",
    "\u4e2d\u6587 text and \U0001f600 emoji, \u3053\u3093\u306b\u3061\u306f world",
    "def f(x):\n    return x * 2  # code\n",
] * 20
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ALPHABET = "ab cdefg  \n\u00e9\u00ef\u4e2d\u6587\u6f22\u5b57\U0001f600\U0001f389\u03a9\u3053.,"


def wrap(backend: tokenizers.Tokenizer) -> Tokenizer:
    assets = TokenizerAssets(backend.to_str(), None, None, (), False, None, None)
    return Tokenizer(assets)


@pytest.fixture(scope="module")
def byte_level() -> Tokenizer:
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 350)
    return wrap(backend)


@pytest.fixture(scope="module")
def sentencepiece() -> Tokenizer:
    """Llama-2 style: ▁ for spaces, <0xNN> byte fallback, decoder strips the first space."""
    trained = tokenizers.Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.Metaspace()
    trained.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=200, show_progress=False))
    spec = json.loads(trained.to_str())["model"]
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces += sorted(spec["vocab"], key=spec["vocab"].get)
    merges = [tuple(m) for m in spec["merges"]]
    model = models.BPE({p: i for i, p in enumerate(pieces)}, merges, byte_fallback=True)
    backend = tokenizers.Tokenizer(model)
    backend.normalizer = normalizers.Sequence(
        [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
    )
    backend.decoder = decoders.Sequence(
        [
            decoders.Replace("\u2581", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    backend.add_special_tokens(["<unk>", "<s>", "</s>"])
    return wrap(backend)


def stream(tokenizer: Tokenizer, ids: list[int], prompt: list[int] | None = None) -> list[str]:
    detokenizer = IncrementalDetokenizer(tokenizer, prompt_ids=prompt or [])
    return [detokenizer.push(token_id) for token_id in ids] + [detokenizer.flush()]


def added_text(tokenizer: Tokenizer, prompt: list[int], ids: list[int]) -> str:
    """What the output adds to the prompt's text: the detokenizer's contract."""
    before, after = tokenizer.decode(prompt), tokenizer.decode(prompt + ids)
    assert after.startswith(before)
    return after[len(before) :]


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40)))


def test_multibyte_characters_are_split_across_tokens(byte_level, sentencepiece):
    for tokenizer in (byte_level, sentencepiece):
        pieces = [tokenizer.decode([i]) for i in tokenizer.encode("\U0001f389\u03a9")]
        assert any("\ufffd" in piece for piece in pieces)


@pytest.mark.parametrize("name", ["byte_level", "sentencepiece"])
def test_stream_of_valid_text_equals_full_decode_without_replacement_chars(name, request):
    tokenizer = request.getfixturevalue(name)
    specials = [tokenizer.token_to_id(t) for t in ("<|im_end|>", "</s>")]
    rng = random.Random(7)
    for _ in range(300):
        ids = tokenizer.encode(random_text(rng))
        if rng.random() < 0.3:  # a skipped special token in the middle
            ids.insert(rng.randrange(len(ids) + 1), next(i for i in specials if i is not None))
        pieces = stream(tokenizer, ids)
        assert "".join(pieces) == tokenizer.decode(ids)
        assert not any("\ufffd" in piece for piece in pieces)
        prompt = tokenizer.encode(random_text(rng))
        pieces = stream(tokenizer, ids, prompt)
        assert "".join(pieces) == added_text(tokenizer, prompt, ids)
        assert not any("\ufffd" in piece for piece in pieces)


def test_random_byte_level_token_soup_equals_full_decode(byte_level):
    rng = random.Random(11)
    for _ in range(300):
        ids = [rng.randrange(byte_level.vocab_size) for _ in range(rng.randint(1, 30))]
        assert "".join(stream(byte_level, ids)) == byte_level.decode(ids)


def test_random_sentencepiece_pieces_keep_their_spaces(sentencepiece):
    non_byte = [
        i
        for i in range(sentencepiece.vocab_size)
        if not sentencepiece.id_to_token(i).startswith("<")
    ]
    rng = random.Random(13)
    for _ in range(300):
        ids = [rng.choice(non_byte) for _ in range(rng.randint(1, 30))]
        assert "".join(stream(sentencepiece, ids)) == sentencepiece.decode(ids)


def test_leading_space_pieces_mid_stream(sentencepiece):
    ids = sentencepiece.encode("the quick fox")
    pieces = stream(sentencepiece, ids)
    assert "".join(pieces) == "the quick fox"
    assert " quick" in "".join(pieces[1:])


def test_first_output_word_keeps_its_space_after_the_prompt(sentencepiece):
    prompt = sentencepiece.encode("the quick")
    out = sentencepiece.encode("the fox")[1:]  # "▁fox": a word that follows a space
    assert sentencepiece.decode(out) == "fox"  # decoded alone, the space is lost
    assert "".join(stream(sentencepiece, out, prompt)) == " fox"


def test_split_emoji_is_held_until_complete(byte_level):
    ids = byte_level.encode("\U0001f389")
    detokenizer = IncrementalDetokenizer(byte_level, [])
    assert [detokenizer.push(i) for i in ids[:-1]] == [""] * (len(ids) - 1)
    assert detokenizer.push(ids[-1]) == "\U0001f389"
    assert detokenizer.flush() == ""


def test_incomplete_character_at_end_is_flushed_as_replacement(byte_level):
    ids = byte_level.encode("ok \U0001f389")[:-1]
    detokenizer = IncrementalDetokenizer(byte_level, [])
    pushed = "".join(detokenizer.push(i) for i in ids)
    assert "\ufffd" not in pushed
    assert pushed + detokenizer.flush() == byte_level.decode(ids)
    assert byte_level.decode(ids).endswith("\ufffd")


def test_output_ids_are_recorded(byte_level):
    detokenizer = IncrementalDetokenizer(byte_level, [5])
    ids = byte_level.encode("abc")
    for token_id in ids:
        detokenizer.push(token_id)
    assert detokenizer.output_ids == tuple(ids)
    assert detokenizer.prompt_ids == (5,)
