import random

import pytest

from mlcx.runtime.text.stop import StopCheck, StopStringMatcher


def stream(stop: list[str], deltas: list[str]) -> tuple[str, str | None]:
    """Everything emitted for `deltas`, and the stop string hit (None: flushed at the end)."""
    matcher = StopStringMatcher(stop)
    out = []
    for delta in deltas:
        check = matcher.feed(delta)
        out.append(check.text)
        if check.stopped:
            return "".join(out), check.stop
    return "".join(out) + matcher.flush(), None


def reference(stop: list[str], text: str) -> tuple[str, str | None]:
    """Character by character: generation ends as soon as any stop string is complete."""
    for end in range(1, len(text) + 1):
        for s in sorted(stop, key=len, reverse=True):
            if text[:end].endswith(s):
                return text[: end - len(s)], s
    return text, None


def random_split(rng: random.Random, text: str) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(0, 6))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def test_stop_string_split_across_deltas_is_cut_exactly():
    matcher = StopStringMatcher(["###"])
    assert matcher.feed("Hello #") == StopCheck("Hello ")
    assert matcher.feed("#") == StopCheck("")
    check = matcher.feed("# tail")
    assert check == StopCheck("", "###")
    assert check.stopped


def test_held_text_released_when_it_cannot_start_a_stop():
    matcher = StopStringMatcher(["</end>"])
    assert matcher.feed("a </e").text == "a "
    assert matcher.feed("x").text == "</ex"
    assert matcher.flush() == ""


def test_flush_returns_held_suffix_when_generation_ends():
    matcher = StopStringMatcher(["STOP"])
    assert matcher.feed("go ST").text == "go "
    assert not matcher.stopped
    assert matcher.flush() == "ST"


def test_earliest_completed_stop_wins_regardless_of_list_order():
    assert stream(["abcdef", "cd"], ["xabcdefy"]) == ("xab", "cd")
    assert stream(["b", "ab"], ["xab"]) == ("x", "ab")


def test_feeding_after_stop_is_an_error():
    matcher = StopStringMatcher(["x"])
    assert matcher.feed("ax").stop == "x"
    with pytest.raises(ValueError, match="already hit"):
        matcher.feed("more")


@pytest.mark.parametrize("bad", [[""], ["ok", 3], "STOP"])
def test_invalid_stop_lists_are_rejected(bad):
    with pytest.raises(ValueError):
        StopStringMatcher(bad)


def test_no_stop_strings_passes_text_through():
    assert stream([], ["a", "b"]) == ("ab", None)


def test_random_texts_and_splits_match_character_by_character_reference():
    rng = random.Random(1234)
    for _ in range(2000):
        stop = ["".join(rng.choice("ab\u00e9") for _ in range(rng.randint(1, 4))) for _ in range(3)]
        text = "".join(rng.choice("ab\u00e9c") for _ in range(rng.randint(2, 25)))
        assert stream(stop, random_split(rng, text)) == reference(stop, text), (stop, text)
