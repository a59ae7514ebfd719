"""Tokenizers that speak the reply formats of mlcx/runtime/text/reasoning, trained in-test:
gpt-oss's harmony markers as special tokens, and Qwen3's (and Qwen3.5's) `<think>` tags as
added (not special) tokens; each with its model's real chat template
(tests/fixtures/chat_templates)."""

from __future__ import annotations

import shutil
from pathlib import Path

import tokenizers

from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.tiny_tokenizers import train_byte_level_bpe

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
CORPUS = [
    "The user asks about the weather in Tokyo. I should call the weather tool.",
    'It is sunny in Tokyo, 20 degrees. {"location": "Tokyo"} {"temp": 20}',
    "You are ChatGPT, a large language model trained by OpenAI. Knowledge cutoff: Reasoning",
    "Hello! How can I help you today? Let me think about greeting the user.",
    "analysis commentary final functions.get_weather json assistant user system developer",
    "caf\u00e9 \u4e2d\u6587 \U0001f600 numbers 2024",
] * 30
HARMONY_SPECIALS = [
    "<|startoftext|>",
    "<|endoftext|>",
    "<|return|>",
    "<|constrain|>",
    "<|channel|>",
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|call|>",
]
THINK_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
VOCAB = 384  # the tiny test models' vocabulary (tests/support/tiny_models.py)


def _assets(backend: tokenizers.Tokenizer, template: str, bos: str, eos: list[str]):
    return TokenizerAssets(
        tokenizer_json=backend.to_str(),
        chat_template=(TEMPLATES / template).read_text(encoding="utf-8"),
        bos_token_id=backend.token_to_id(bos),
        eos_token_ids=tuple(backend.token_to_id(t) for t in eos),
        add_bos=False,
        bos_token=bos,
        eos_token=eos[0],
    )


def harmony_assets() -> TokenizerAssets:
    """gpt-oss's: the reply ends at `<|return|>` or `<|call|>` (its generation config's eos)."""
    backend = train_byte_level_bpe(CORPUS, HARMONY_SPECIALS, VOCAB)
    return _assets(backend, "gpt_oss.jinja", "<|startoftext|>", ["<|return|>", "<|call|>"])


def think_assets(template: str = "qwen3.jinja") -> TokenizerAssets:
    """Qwen3's: `<think>` and `</think>` are added tokens that decoding keeps. `template`:
    "qwen3_5.jinja" for Qwen3.5's (the same tokens; tool calls in XML)."""
    backend = train_byte_level_bpe(CORPUS, THINK_SPECIALS, VOCAB - 2)
    backend.add_tokens([tokenizers.AddedToken(t, special=False) for t in ("<think>", "</think>")])
    return _assets(backend, template, "<|endoftext|>", ["<|im_end|>", "<|endoftext|>"])


def tokenizer(assets: TokenizerAssets) -> Tokenizer:
    return Tokenizer(assets)


def with_assets(artifact: Path, assets: TokenizerAssets, out: Path) -> Path:
    """A copy of a compiled tiny artifact that speaks through `assets` instead."""
    shutil.copytree(artifact, out)
    assets.write(out)
    return out
