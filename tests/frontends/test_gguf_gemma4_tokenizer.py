"""Gemma 4's GGUF tokenizer (tokenizer model `gemma4`: SentencePiece-style BPE with merges and
byte fallback, merged within lines), as llama.cpp's own converter writes it from a tiny Gemma 4
folder whose tokenizer.json is of that kind, against transformers' tokenizer of the folder."""

from __future__ import annotations

import json
import random
from pathlib import Path

import gguf
import pytest

from mlcx.frontends.gguf.tokenizer import assets_from_gguf
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.frontends.test_gguf_gemma_phi3_tokenizer import ALPHABET, BYTES
from tests.frontends.test_gguf_tokenizer import CORPUS
from tests.support.llamacpp_convert import convert

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
SPACE = "\u2581"


def _tokenizer_json(folder: Path) -> int:
    """A Gemma-style tokenizer.json (▁ for spaces, byte fallback, newlines apart); its size."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    newlines = pre_tokenizers.Split(Regex(r"[^\n]+|\n+"), behavior="isolated")
    draft = Tokenizer(models.BPE())
    draft.normalizer = normalizers.Replace(" ", SPACE)
    draft.pre_tokenizer = newlines
    draft.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, show_progress=False))
    trained = json.loads(draft.to_str())["model"]
    pieces = sorted(trained["vocab"], key=trained["vocab"].get)
    vocab = {t: i for i, t in enumerate([*SPECIALS, *BYTES, *pieces])}
    merges = [tuple(m) for m in trained["merges"]]
    backend = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True))
    backend.normalizer, backend.pre_tokenizer = draft.normalizer, newlines
    steps = [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    backend.decoder = decoders.Sequence(steps)
    backend.add_special_tokens(SPECIALS)
    backend.save(str(folder / "tokenizer.json"))
    config = {"tokenizer_class": "TokenizersBackend", "bos_token": "<bos>", "eos_token": "<eos>"}
    config |= {"unk_token": "<unk>", "pad_token": "<pad>", "add_bos_token": True}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return len(vocab)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Gemma4TextConfig

    root = tmp_path_factory.mktemp("gemma4-tokenizer")
    folder = root / "hf"
    folder.mkdir()
    vocab = _tokenizer_json(folder)
    config = Gemma4TextConfig(
        vocab_size=vocab,
        vocab_size_per_layer_input=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        global_head_dim=16,  # llama.cpp's converter finds no global head width equal to head_dim
        layer_types=["sliding_attention", "full_attention"],
        hidden_size_per_layer_input=4,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
    )
    torch.manual_seed(0)  # the same bytes each run: the converted file is kept under them
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(folder)
    path = convert(folder, root / "tokenizer.gguf")
    return assets_from_gguf(gguf.GGUFReader(str(path))), AutoTokenizer.from_pretrained(folder)


def _texts() -> list[str]:
    rng = random.Random(11)
    texts = ["Hello world", "a  b   c\n\nd", "\n\nleading\nlines\n", "\u4e2d\U0001f600 caf\u00e9"]
    texts += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(120)]
    return texts + [rng.choice(CORPUS)[: rng.randint(5, 60)] for _ in range(60)]


def test_the_file_is_gemma4s(pair):
    assets, _ = pair
    assert (assets.bos_token, assets.eos_token, assets.add_bos) == ("<bos>", "<eos>", True)


def test_tokens_match_transformers(pair):
    assets, reference = pair
    ours = Tokenizer(assets)
    for text in _texts():
        ids = ours.encode(text, add_special_tokens=False)
        assert ids == reference.encode(text, add_special_tokens=False), text
        assert ours.decode(ids) == reference.decode(ids), text
        assert ours.encode(text, add_special_tokens=True) == [reference.bos_token_id, *ids]
