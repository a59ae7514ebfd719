"""Output processing of sampled tokens: text deltas, stop strings against the scheduler's
token-level finish reasons, and when a request's output state is dropped."""

from __future__ import annotations

import pytest

from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.core.output_processor import OutputProcessor
from mlcx.runtime.core.sequence import Sequence, SequenceStatus
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import SampleResult
from mlcx.runtime.text.tokenizer import Tokenizer
from tests.support.tiny_tokenizers import train_byte_level_bpe

CORPUS = ["hello world, say hello again. The end of the xylophone world."] * 20
RUNNING, STOPPED, LENGTH = (
    SequenceStatus.RUNNING,
    SequenceStatus.FINISHED_STOPPED,
    SequenceStatus.FINISHED_LENGTH,
)


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    backend = train_byte_level_bpe(CORPUS, ["<|endoftext|>"], 300)
    return Tokenizer(TokenizerAssets(backend.to_str(), None, None, (), False, None, None))


def ids(tokenizer: Tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def run(tokenizer, params: SamplingParams, text: str, last: SequenceStatus, extra=()):
    """Feed `text`'s tokens (then `extra` ones) as choice 0 of request "r"; the scheduler's
    status is RUNNING except `last` for the final token. Returns (text, finish) per delta."""
    prompt = ids(tokenizer, "The end")
    proc = OutputProcessor(tokenizer)
    proc.add_request("r", prompt, params)
    tokens = [*ids(tokenizer, text), *extra]
    seq = Sequence(0, "r", 0, list(prompt), len(prompt), status=RUNNING)
    deltas = []
    for i, token in enumerate(tokens):
        seq.token_ids.append(token)
        seq.status = last if i == len(tokens) - 1 else RUNNING
        [delta] = proc.process([seq], [SampleResult(token, None, None)])
        deltas.append(delta)
    return [(d.text, d.finish_reason) for d in deltas], deltas[-1], proc


def test_a_stop_string_ends_the_choice_and_cuts_its_text(tokenizer):
    params = SamplingParams.greedy(stop=[" wor"])
    texts, last, proc = run(tokenizer, params, "hello world", RUNNING)
    assert texts == [("hello", None), ("", "stop")]
    assert last.token_ids == tuple(ids(tokenizer, " world"))
    assert (last.completion_tokens, last.prompt_tokens) == (2, 2)
    assert "r" not in proc


def test_a_stop_token_adds_no_text_but_flushes_the_held_text(tokenizer):
    params = SamplingParams.greedy(stop=["xyz"])
    [again] = ids(tokenizer, " again")  # the scheduler found it in stop_token_ids
    texts, last, _ = run(tokenizer, params, "say hello x", STOPPED, extra=[again])
    # "x" may start "xyz": held back until the stop token ends the choice.
    assert texts == [("say", None), (" hello", None), (" ", None), ("", None), ("x", "stop")]
    assert last.token_ids == (again,)


def test_max_tokens_keeps_the_last_token_text(tokenizer):
    params = SamplingParams.greedy(stop=["xyz"])
    texts, _, _ = run(tokenizer, params, "say hello x", LENGTH)
    assert texts == [("say", None), (" hello", None), (" ", None), ("x", "length")]


def test_a_stop_string_in_the_last_token_beats_max_tokens(tokenizer):
    params = SamplingParams.greedy(stop=[" wor"])
    texts, _, _ = run(tokenizer, params, "hello world", LENGTH)
    assert texts == [("hello", None), ("", "stop")]


def test_a_request_is_dropped_once_every_choice_finished_or_on_abort(tokenizer):
    proc = OutputProcessor(tokenizer)
    proc.add_request("r", [5, 6], SamplingParams.greedy(n=2))
    seqs = [Sequence(i, "r", i, [5, 6, 7], 2, status=LENGTH) for i in range(2)]
    proc.process(seqs[:1], [SampleResult(7, None, None)])
    assert "r" in proc
    proc.process(seqs[1:], [SampleResult(7, None, None)])
    assert "r" not in proc

    proc.add_request("s", [5, 6], SamplingParams.greedy(n=2))
    [delta] = proc.abort("s", [Sequence(2, "s", 0, [5, 6], 2)])
    assert (delta.index, delta.text, delta.token_ids, delta.finish_reason) == (0, "", (), "abort")
    assert "s" not in proc
