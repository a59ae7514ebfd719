"""Constraint compilation and token masks on the tiny model's tokenizer, no model: masks are
checked against the words of a finite language, decoded token by token."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import sample
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.structured.constraint import Constraint
from mlcx.runtime.structured.matcher import ConstraintCompiler, one_line
from mlcx.runtime.structured.token_masks import TokenMasks
from mlcx.runtime.text.tokenizer import Tokenizer

WORDS = ["cat", "cats", "dog", "dogs", "cow"]
REGEX = Constraint("regex", "(cat|dog)s?|cow")


@pytest.fixture(scope="module")
def tokenizer(compiled) -> Tokenizer:
    return Tokenizer.from_dir(compiled())


@pytest.fixture(scope="module")
def compiler(tokenizer) -> ConstraintCompiler:
    return ConstraintCompiler(tokenizer)


def _allowed(matchers, vocab: int) -> np.ndarray:
    return TokenMasks(range(len(matchers)), matchers, vocab).fill().allowed()


def _reference(tokenizer: Tokenizer, prefix: str) -> np.ndarray:
    """Token t may follow `prefix` iff some word starts with prefix + text(t); EOS iff the
    prefix is a word; no other special token ever."""
    want = np.zeros(tokenizer.vocab_size, dtype=bool)
    for t in range(tokenizer.vocab_size):
        text = tokenizer.decode([t], skip_special_tokens=False)
        want[t] = bool(text) and any(w.startswith(prefix + text) for w in WORDS)
    for eos in tokenizer.eos_token_ids:
        want[eos] = prefix in WORDS
    return want


@pytest.mark.parametrize("word", ["cats", "dog", "cow"])
def test_masks_allow_exactly_the_extensions_of_the_language(tokenizer, compiler, word):
    matcher = compiler.compile(REGEX).matcher()
    for end in range(len(word) + 1):
        prefix = word[:end]
        got = _allowed([matcher], tokenizer.vocab_size)[0]
        np.testing.assert_array_equal(got, _reference(tokenizer, prefix), err_msg=prefix)
        complete = not any(w.startswith(prefix) and w != prefix for w in WORDS)
        assert matcher.done == complete  # nothing but EOS may follow "cats" or "cow"
        if end < len(word):
            matcher.advance(tokenizer.token_to_id(word[end]))


def test_compiled_constraints_are_cached_per_kind_and_spec(tokenizer, compiler):
    first = compiler.compile(REGEX)
    again = compiler.compile(Constraint("regex", REGEX.spec, param="other"))
    assert again.template is first.template and again.constraint.param == "other"
    lark = Constraint("grammar", f"start: /{REGEX.spec}/")
    assert compiler.compile(lark).template is not first.template
    a, b = first.matcher(), first.matcher()
    a.advance(compiler.ll_tokenizer.tokenize_str("c")[0])
    assert not np.array_equal(*_allowed([a, b], tokenizer.vocab_size))  # each matcher its own state


def test_a_state_rebuilt_from_its_output_stands_where_the_live_one_does(tokenizer, compiler):
    compiled = compiler.compile(Constraint.json_schema({"type": "array", "maxItems": 3}))
    params = SamplingParams()
    live = SamplingState(params, [5, 6], matcher=compiled.matcher())
    tokens = tokenizer.encode("[1, 2")
    for token in tokens:
        live.append(token)
    rebuilt = SamplingState(params, [5, 6], output_ids=tokens, matcher=compiled.matcher())
    masks = _allowed([live.matcher, rebuilt.matcher], tokenizer.vocab_size)
    np.testing.assert_array_equal(masks[0], masks[1])
    assert masks[0][tokenizer.token_to_id("]")] and not masks[0][tokenizer.token_to_id("[")]


def test_several_masks_fill_in_parallel_as_one_by_one(tokenizer, compiler):
    matchers = [compiler.compile(REGEX).matcher() for _ in range(4)]
    for matcher, text in zip(matchers, ["", "c", "do", "cat"], strict=True):
        for token in tokenizer.encode(text):
            matcher.advance(token)
    together = _allowed(matchers, tokenizer.vocab_size)
    alone = np.stack([_allowed([m], tokenizer.vocab_size)[0] for m in matchers])
    np.testing.assert_array_equal(together, alone)


def test_apply_masks_only_the_constrained_rows(tokenizer, compiler):
    vocab = tokenizer.vocab_size
    matcher = compiler.compile(REGEX).matcher()
    logits = np.random.default_rng(0).standard_normal((3, vocab + 20)).astype(np.float32)
    x = logits.copy()
    TokenMasks([1], [matcher], vocab).fill().apply(x)
    allowed = _reference(tokenizer, "")
    np.testing.assert_array_equal(x[[0, 2]], logits[[0, 2]])
    np.testing.assert_array_equal(x[1, :vocab][allowed], logits[1, :vocab][allowed])
    assert np.all(x[1, :vocab][~allowed] == -np.inf) and np.all(x[1, vocab:] == -np.inf)


def test_sampling_picks_the_best_allowed_token(tokenizer, compiler):
    vocab = tokenizer.vocab_size
    logits = np.random.default_rng(1).standard_normal((2, vocab)).astype(np.float32)
    states = [SamplingState(SamplingParams.greedy()) for _ in range(2)]
    states[1].matcher = compiler.compile(REGEX).matcher()
    masks = TokenMasks([1], [states[1].matcher], vocab).fill()
    free, constrained = sample(logits, states, masks)
    allowed = np.flatnonzero(_reference(tokenizer, ""))
    assert free.token_id == int(logits[0].argmax())
    assert constrained.token_id == int(allowed[logits[1, allowed].argmax()])


def test_llguidance_diagnostics_become_one_line():
    message = 'at 1(8): invalid regex "[a-":\n    [a-\n    ^\nerror: unclosed character class\n'
    assert one_line(message) == 'at 1(8): invalid regex "[a-"; unclosed character class'
