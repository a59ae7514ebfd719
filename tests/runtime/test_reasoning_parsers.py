"""The reply parsers against hand-written events (tests/support/reasoning_cases.py): whole,
at every split into two and three deltas, a character at a time, and token by token through
the detokenizer with a tokenizer that has each format's tokens."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from mlcx.runtime.text.detokenizer import IncrementalDetokenizer
from mlcx.runtime.text.reasoning import FORMATS, ParsedReply, ToolCall, model_format
from mlcx.runtime.text.reasoning.events import merged
from tests.support.reasoning_cases import CASES
from tests.support.reasoning_models import harmony_assets, think_assets, tokenizer


def parse(name: str, tail: str, pieces) -> list:
    parser = FORMATS[name].parser(tail)
    events = [e for piece in pieces for e in parser.feed(piece)]
    return merged(events + parser.finish())


def splits(text: str, parts: int):
    for cuts in itertools.combinations(range(1, len(text)), parts - 1):
        bounds = (0, *cuts, len(text))
        yield [text[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_whole_and_every_split(case):
    name, tail, text, events = CASES[case]
    assert parse(name, tail, [text]) == events
    assert parse(name, tail, list(text)) == events
    for pieces in splits(text, 2):
        assert parse(name, tail, pieces) == events, pieces


@pytest.mark.parametrize("case", [c for c in sorted(CASES) if len(CASES[c][2]) < 90])
def test_every_split_in_three(case):
    name, tail, text, events = CASES[case]
    for pieces in splits(text, 3):
        assert parse(name, tail, pieces) == events, pieces


@pytest.fixture(scope="module")
def tokenizers():
    return {"harmony": tokenizer(harmony_assets()), "think": tokenizer(think_assets())}


@pytest.mark.parametrize("case", [c for c in sorted(CASES) if CASES[c][0] != "none"])
def test_token_by_token_through_the_detokenizer(tokenizers, case):
    """What the engine does: the prompt's ids, then each output id decoded with the markers
    kept (harmony's are special tokens) and the parser made from the prompt's ids."""
    name, tail, text, events = CASES[case]
    tok = tokenizers[name]
    prompt = tok.encode("<|endoftext|>" + tail)
    detok = IncrementalDetokenizer(tok, prompt, skip_special_tokens=False)
    parser = FORMATS[name].reply_parser(tok, prompt)
    ids = tok.encode(text)
    assert len(ids) < len(text)  # merges and markers: token pieces, not characters
    got = [e for t in ids for e in parser.feed(detok.push(t))]
    got += parser.feed(detok.flush()) + parser.finish()
    assert merged(got) == events


def test_formats_found_from_template_and_vocabulary(tokenizers):
    harmony, think = harmony_assets(), think_assets()
    assert model_format(tokenizers["harmony"]).name == "harmony"
    assert model_format(tokenizers["think"]).name == "think"
    # the template alone is not enough: its tags must be tokens of the vocabulary
    swapped = replace(think, tokenizer_json=harmony.tokenizer_json)
    assert model_format(tokenizer(swapped)).name == "none"
    swapped = replace(harmony, tokenizer_json=think.tokenizer_json)
    assert model_format(tokenizer(swapped)).name == "none"
    chatml = replace(think, chat_template="{{ messages[0]['content'] }}")
    assert model_format(tokenizer(chatml)).name == "none"


def test_parsed_reply_adds_up_the_events():
    _, tail, text, _ = CASES["harmony: a preamble, then two calls"]
    reply = ParsedReply(FORMATS["harmony"].parser(tail))
    for piece in (text[:50], text[50:120], text[120:]):
        reply.feed(piece)
    reply.finish()
    assert (reply.reasoning, reply.content) == ("", "Checking both.")
    assert reply.tool_calls == [ToolCall("a", "{}"), ToolCall("b_2", '{"x": [1]}')]
