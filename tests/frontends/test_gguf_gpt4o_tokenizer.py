"""A byte-level BPE tokenizer with OpenAI's o200k split (Phi-4-mini's and GPT-4o's
`tokenizer.json`), written to GGUF as llama.cpp names it (`tokenizer.ggml.pre` = gpt-4o),
encodes text as the Hugging Face tokenizer it was written from.

The reference is built the way those `tokenizer.json` files are: a Split on the o200k regex
(CamelCase words split at their capitals, contractions kept on the word, digits in runs of
three, slashes and newlines kept after punctuation), then byte-level mapping without GPT-2's
regex. Its BPE is trained with GPT-2's split, so merges cross the o200k split points and only
the right pre-tokenizer gives the same ids.
"""

from __future__ import annotations

import random

import gguf
import pytest
import tokenizers
from tokenizers import Regex, decoders, pre_tokenizers

from mlcx.frontends.gguf.tokenizer import assets_from_gguf
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.frontends.test_gguf_qwen2_tokenizer import ALPHABET, SPECIALS, write_gguf
from tests.support.tiny_tokenizers import train_byte_level_bpe

# as written in Phi-4-mini-instruct's tokenizer.json
O200K_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CORPUS = [
    "HelloWorld and getValue() call parseHTTPResponse; XMLHttpRequest is old.",
    "In 2024 we sold 1234567 units; I'M sure THEY'LL say it's what you'd do.",
    "path/to/file.txt and ./run.sh\n\n// comment\n\tindent   spaces  ",
    "caf\u00e9 na\u00efve \u00c9cole \u4f60\u597d\u4e16\u754c \U0001f600 r\u00e9sum\u00e9",
] * 30
TEXTS = [
    "HelloWorld getValue parseHTTPResponse",
    "1234567 and 89",
    "I'M here's THEY'LL",
    "path/to/x\n\n  end",
    "<|im_start|>user\nWhat's 12+34?<|im_end|>\n",
    "\u00c9cole caf\u00e9 \u4f60\u597d",
]


@pytest.fixture(scope="module")
def reference() -> tokenizers.Tokenizer:
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 600)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(O200K_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    return backend


def _from_gguf(tmp_path, reference, pre: str) -> Tokenizer:
    path = write_gguf(tmp_path / f"{pre}.gguf", reference, pre)
    return Tokenizer(assets_from_gguf(gguf.GGUFReader(str(path))))


def test_encodes_like_the_hf_tokenizer(tmp_path, reference):
    ours = _from_gguf(tmp_path, reference, "gpt-4o")
    rng = random.Random(0)
    alphabet = ALPHABET + "ABCdef/\u00c9\u00e9"
    randoms = ["".join(rng.choices(alphabet, k=rng.randint(1, 40))) for _ in range(200)]
    for text in TEXTS + randoms:
        want = reference.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, add_special_tokens=True) == want, text
        assert ours.decode(want, skip_special_tokens=False) == text, text


def test_the_vocabulary_tells_o200k_from_gpt2_splitting(tmp_path, reference):
    """The test above is only as strong as this: GPT-2's split gives other ids here."""
    gpt2 = _from_gguf(tmp_path, reference, "gpt2")
    differ = [t for t in TEXTS if gpt2.encode(t) != reference.encode(t).ids]
    assert TEXTS[0] in differ and TEXTS[1] in differ
