"""A Qwen2-style byte-level BPE tokenizer written to GGUF (`tokenizer.ggml.pre` = qwen2) encodes
text as the Hugging Face tokenizer it was written from.

The reference is built the way Qwen2's `tokenizer.json` is: NFC, then a Split on Qwen2's regex
(case-insensitive contractions, letters with one leading non-letter, every digit alone), then
byte-level mapping without GPT-2's own regex. Its BPE is trained with GPT-2's split, so the
vocabulary has multi-digit tokens and merges across Qwen2's split points: only the right
pre-tokenizer gives the same ids.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import gguf
import numpy as np
import pytest
import tokenizers
from tokenizers import Regex, decoders, normalizers, pre_tokenizers

from mlcx.frontends.gguf.tokenizer import assets_from_gguf
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.tiny_tokenizers import train_byte_level_bpe

QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "In 2024 we sold 12345 units; in 2025, 678 more. Pi is 3.14159.",
    "I'm sure we'll see. They've said it's what you'd DO, isn't it? HE'LL GO.",
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u3002"
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "def f(x):\n    return x  +  1\n\n\ttabbed   spaces   here  ",
] * 30
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXTS = [
    "In 2024 we sold 12345 units",
    "I'm sure we'll see; THEY'VE gone, it's 3.14159!",
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u4eca\u5929 2025\u5e74",
    "x  \n\n  y\t\tz   ",
    "<|im_start|>user\nWhat's 12+34?<|im_end|>\n",
    "'S 'll's don't",
]
ALPHABET = "abcXYZ '\n\t.,!?0123456789\u4f60\u597d\u4e16\u754c\U0001f600"


def reference_tokenizer() -> tokenizers.Tokenizer:
    backend = train_byte_level_bpe(CORPUS, SPECIALS, 600)
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    return backend


def write_gguf(path: Path, backend: tokenizers.Tokenizer, pre: str) -> Path:
    model = json.loads(backend.to_str())["model"]
    tokens = sorted(model["vocab"], key=model["vocab"].get)
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in SPECIALS else 1 for t in tokens])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in model["merges"]])
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def reference() -> tokenizers.Tokenizer:
    return reference_tokenizer()


def from_gguf(tmp_path: Path, reference: tokenizers.Tokenizer, pre: str) -> Tokenizer:
    path = write_gguf(tmp_path / f"{pre}.gguf", reference, pre)
    return Tokenizer(assets_from_gguf(gguf.GGUFReader(str(path))))


def test_encodes_like_the_hf_tokenizer(tmp_path, reference):
    ours = from_gguf(tmp_path, reference, "qwen2")
    rng = random.Random(0)
    randoms = ["".join(rng.choices(ALPHABET, k=rng.randint(1, 40))) for _ in range(200)]
    for text in TEXTS + randoms:
        want = reference.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, add_special_tokens=True) == want, text
        assert ours.decode(want, skip_special_tokens=False) == text, text


def test_the_vocabulary_tells_qwen2_from_gpt2_splitting(tmp_path, reference):
    """The test above is only as strong as this: GPT-2's split gives other ids here."""
    gpt2 = from_gguf(tmp_path, reference, "gpt2")
    differ = [t for t in TEXTS if gpt2.encode(t) != reference.encode(t).ids]
    assert TEXTS[0] in differ and TEXTS[1] in differ
    ours = from_gguf(tmp_path, reference, "qwen2")
    assert [ours.id_to_token(i) for i in ours.encode("12345")] == list("12345")
    assert len(gpt2.encode("12345")) < 5


def test_chat_template_and_end_token_come_from_the_file(tmp_path, reference):
    ours = from_gguf(tmp_path, reference, "qwen2")
    assert ours.assets.chat_template == CHATML
    assert ours.eos_token_ids == (reference.token_to_id("<|im_end|>"),)
    assert not ours.add_bos
