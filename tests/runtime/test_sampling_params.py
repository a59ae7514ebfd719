"""SamplingParams validation: every bad field is rejected with a message naming it, and an
error whose `param` is that field."""

import dataclasses
import math

import pytest

from mlcx.artifact.sampling import DEFAULTABLE, FALLBACK, recorded_defaults
from mlcx.errors import InvalidFieldError
from mlcx.runtime.sample.params import SamplingParams

BAD_FIELDS = [
    ("max_tokens", 0),
    ("max_tokens", -3),
    ("max_tokens", 1.5),
    ("max_tokens", True),
    ("temperature", -0.1),
    ("temperature", math.nan),
    ("temperature", math.inf),
    ("temperature", 100.5),
    ("temperature", "1"),
    ("top_p", 0.0),
    ("top_p", 1.01),
    ("top_p", math.nan),
    ("top_k", -2),
    ("top_k", 2.5),
    ("top_k", False),
    ("min_p", -0.01),
    ("min_p", 1.5),
    ("repetition_penalty", 0.0),
    ("repetition_penalty", -1.0),
    ("repetition_penalty", math.nan),
    ("repetition_penalty", math.inf),
    ("presence_penalty", 2.01),
    ("presence_penalty", -2.01),
    ("frequency_penalty", 3.0),
    ("frequency_penalty", math.nan),
    ("logit_bias", {1: 100.5}),
    ("logit_bias", {1: -101.0}),
    ("logit_bias", {1: math.nan}),
    ("logit_bias", {-1: 1.0}),
    ("logit_bias", {"5": 1.0}),
    ("logit_bias", [(1, 2.0)]),
    ("seed", -1),
    ("seed", 1.5),
    ("seed", 2**64),
    ("stop", [""]),
    ("stop", ["ok", 3]),
    ("stop", 5),
    ("stop_token_ids", [-1]),
    ("stop_token_ids", "12"),
    ("stop_token_ids", [1.0]),
    ("ignore_eos", 1),
    ("logprobs", "yes"),
    ("top_logprobs", -1),
    ("top_logprobs", 21),
    ("n", 0),
    ("n", 17),
]


@pytest.mark.parametrize(("field", "value"), BAD_FIELDS)
def test_bad_field_is_rejected_naming_it(field, value):
    extra = {"logprobs": True} if field == "top_logprobs" else {}
    with pytest.raises(InvalidFieldError, match=field) as caught:
        SamplingParams(**{field: value, **extra})
    assert caught.value.param == field


def test_defaults_are_valid():
    p = SamplingParams()
    assert p.max_tokens == 256
    assert p.temperature == 1.0 and not p.is_greedy
    assert p.top_k == 0 and p.top_p == 1.0 and p.n == 1


def test_greedy_constructor():
    p = SamplingParams.greedy(max_tokens=8)
    assert p.is_greedy and p.temperature == 0.0 and p.max_tokens == 8


def test_top_logprobs_requires_logprobs():
    with pytest.raises(InvalidFieldError, match="top_logprobs") as caught:
        SamplingParams(top_logprobs=3)
    assert caught.value.param == "top_logprobs"
    assert SamplingParams(logprobs=True, top_logprobs=20).top_logprobs == 20


def test_seed_leaves_room_for_every_choice():
    SamplingParams(seed=2**64 - 4, n=4)
    with pytest.raises(ValueError, match="seed"):
        SamplingParams(seed=2**64 - 3, n=4)


def test_normalization():
    bias = {3: 1}
    p = SamplingParams(top_k=-1, stop="END", stop_token_ids=[2, 7], logit_bias=bias, top_p=1)
    bias[4] = 5.0  # the caller's dict must not leak into the params
    assert p.top_k == 0
    assert p.stop == ("END",)
    assert p.stop_token_ids == (2, 7)
    assert p.logit_bias == {3: 1.0} and isinstance(p.logit_bias[3], float)
    assert isinstance(p.top_p, float)
    assert SamplingParams(stop=["a", "b"]).stop == ("a", "b")


def test_max_tokens_none_means_context_window():
    assert SamplingParams(max_tokens=None).max_tokens is None


def test_frozen_and_hashable():
    p = SamplingParams(logit_bias={1: 2.0})
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.temperature = 0.5  # type: ignore[misc]
    assert hash(p) == hash(SamplingParams(logit_bias={1: 3.0}))
    assert p == SamplingParams(logit_bias={1: 2.0})
    assert p != SamplingParams(logit_bias={1: 3.0})


def test_with_updates_revalidates():
    p = SamplingParams()
    assert p.with_updates(temperature=0.0).is_greedy
    with pytest.raises(ValueError, match="top_p"):
        p.with_updates(top_p=2.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"logit_bias": {100: 1.0}}, "logit_bias"), ({"stop_token_ids": (5, 100)}, "stop_token_ids")],
)
def test_validate_vocab(kwargs, field):
    p = SamplingParams(**kwargs)
    p.validate_vocab(101)
    with pytest.raises(InvalidFieldError, match=field) as caught:
        p.validate_vocab(100)
    assert caught.value.param == field


def test_validate_vocab_rejects_bad_size():
    with pytest.raises(ValueError, match="vocab_size"):
        SamplingParams().validate_vocab(0)


def test_with_defaults_fills_only_what_is_not_given():
    # max_tokens and stop are not model defaults: an artifact recording them is ignored
    defaults = {"temperature": 0.2, "top_p": 0.9, "max_tokens": 7, "stop": "x"}
    p = SamplingParams.with_defaults(defaults, temperature=None, top_k=5, seed=None)
    assert (p.temperature, p.top_p, p.top_k, p.seed) == (0.2, 0.9, 5, None)
    assert (p.max_tokens, p.stop) == (256, ())
    assert SamplingParams.with_defaults(defaults, temperature=0.0, top_p=1.0).is_greedy
    assert SamplingParams.with_defaults(defaults, max_tokens=None).max_tokens is None
    with pytest.raises(InvalidFieldError, match="top_p") as caught:
        SamplingParams.with_defaults({"top_p": 2.0})
    assert caught.value.param == "top_p"


def test_recorded_defaults_are_defaultable_fields():
    fields = {f.name for f in dataclasses.fields(SamplingParams)}
    assert set(DEFAULTABLE) <= fields
    generation_config = {"temperature": 0.6, "top_k": 20, "do_sample": True, "max_length": 9}
    assert recorded_defaults(generation_config) == {"temperature": 0.6, "top_k": 20}
    assert recorded_defaults({"top_p": "high"}) == FALLBACK
