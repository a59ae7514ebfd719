"""The SentencePiece tokenizers of Gemma 3 and Phi-3 GGUF files (tokenizer model `llama`)
against transformers' own GGUF tokenizer loader, on the same files.

Gemma's files spell tokens of several spaces as real spaces, write no space prefix, list no
merges, and carry scores that do not follow the merge order (the token order does): the Gemma
vocabulary here gets shuffled scores, so ranking merges by score would tokenize differently.
Phi-3's files are Llama-2 style with a prefix space and chat tokens. Chat templates and
BOS/EOS come from the files."""

from __future__ import annotations

import random
from pathlib import Path

import gguf
import numpy as np
import pytest

from mlcx.frontends.gguf.tokenizer import assets_from_gguf
from mlcx.runtime.text.chat_template import ChatTemplate
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.frontends.test_gguf_tokenizer import CORPUS, trained

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
    "{{ message['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
PHI3_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>' + '\n' + message['content']"
    " + '<|end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}"
    "{% endif %}"
)
BYTES = [f"<0x{b:02X}>" for b in range(256)]
ALPHABET = "abcXYZ    '\n.,!?-0123456789\u00e9\u4e2d\U0001f600"


def _texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = ["Hello world", "a  b   c    d", "  two leading", "\u4e2d\U0001f600 caf\u00e9"]
    texts += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(120)]
    return texts + [rng.choice(CORPUS)[: rng.randint(5, 60)] for _ in range(60)]


def _write(path: Path, arch: str, tokens, types, scores, **keys) -> Path:
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(8)
    writer.add_feed_forward_length(16)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_key_length(4)
    writer.add_value_length(4)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_scores(scores)
    for key, value in keys.items():
        getattr(writer, f"add_{key}")(value)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def pieces():
    from tokenizers import pre_tokenizers

    return trained(pre_tokenizers.Metaspace(), 300, [])[0]


def _gemma(tmp_path: Path, pieces: list[str]) -> Path:
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
    spaces = [" " * n for n in range(2, 6)]  # as llama.cpp's converter writes Gemma's
    tokens = [*specials, *BYTES, *spaces, *pieces]
    types = [3, 3, 3, 2, 3, 3] + [6] * 256 + [4] * len(spaces) + [1] * len(pieces)
    scores = np.random.default_rng(0).permutation(len(tokens)).astype(float).tolist()
    return _write(
        tmp_path / "gemma.gguf",
        "gemma3",
        tokens,
        types,
        scores,
        bos_token_id=2,
        eos_token_id=1,
        unk_token_id=3,
        add_bos_token=True,
        add_space_prefix=False,
        chat_template=GEMMA_TEMPLATE,
    )


def _phi3(tmp_path: Path, pieces: list[str]) -> Path:
    specials = ["<unk>", "<s>", "</s>"]
    chat = ["<|user|>", "<|assistant|>", "<|end|>"]
    tokens = [*specials, *BYTES, *pieces, *chat]
    types = [2, 3, 3] + [6] * 256 + [1] * len(pieces) + [3] * len(chat)
    scores = [0.0] * 259 + [-float(rank) for rank in range(len(pieces))] + [0.0] * len(chat)
    return _write(
        tmp_path / "phi3.gguf",
        "phi3",
        tokens,
        types,
        scores,
        bos_token_id=1,
        eos_token_id=tokens.index("<|end|>"),
        unk_token_id=0,
        chat_template=PHI3_TEMPLATE,
    )


@pytest.fixture(params=["gemma3", "phi3"])
def pair(request, tmp_path, pieces):
    from transformers import AutoTokenizer

    path = {"gemma3": _gemma, "phi3": _phi3}[request.param](tmp_path, pieces)
    assets = assets_from_gguf(gguf.GGUFReader(str(path)))
    reference = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return request.param, assets, reference


def test_tokens_match_transformers(pair):
    _, assets, reference = pair
    ours = Tokenizer(assets)
    for text in _texts(5):
        ids = ours.encode(text, add_special_tokens=True)
        assert ids == reference.encode(text), text
        assert ours.decode(ids) == reference.decode(ids, skip_special_tokens=True), text


def test_chat_template_and_special_tokens_come_from_the_file(pair):
    arch, assets, reference = pair
    want_bos, want_eos = {"gemma3": ("<bos>", "<eos>"), "phi3": ("<s>", "<|end|>")}[arch]
    assert (assets.bos_token, assets.eos_token, assets.add_bos) == (want_bos, want_eos, True)
    messages = [{"role": "user", "content": "Hello  there"}, {"role": "assistant", "content": "Hi"}]
    template = ChatTemplate(assets.chat_template, assets.bos_token, assets.eos_token)
    rendered = template.render(messages)
    want = reference.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == want
    ours = Tokenizer(assets)
    assert ours.encode(rendered) == reference.encode(rendered, add_special_tokens=False)


def test_gemma_space_runs_are_single_tokens(tmp_path, pieces):
    ours = Tokenizer(assets_from_gguf(gguf.GGUFReader(str(_gemma(tmp_path, pieces)))))
    ids = ours.encode("a    b")
    assert "\u2581" * 4 in [ours.id_to_token(i) for i in ids]
    assert ours.decode(ids) == "a    b"
