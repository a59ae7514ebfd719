"""`mlcx bench web`: the measurements and their summary on made-up samples, and one real run
on a tiny artifact in headless Chromium and natively on Chromium's SwiftShader."""

from __future__ import annotations

import pytest

from mlcx.web.bench import BenchSpec, SideResult, WebBench, bench_web, prompt_ids, report
from mlcx.web.dawn import SLOW_ON_SWIFTSHADER, DawnToggles
from mlcx.web.timing import Answer, Sample


def _side(where: str, prefill_s: list[float], decode_s: list[float], answer=None) -> SideResult:
    samples = tuple(Sample(64, p, 16, d) for p, d in zip(prefill_s, decode_s, strict=True))
    return SideResult(where, f"{where} adapter", 1.0, samples, answer)


def test_speeds_are_medians_and_ratios_are_browser_over_native():
    native = _side("native", [8, 16, 4], [16, 8, 32])  # prefill 4, 8, 16 tok/s; decode 1, 2, .5
    browser = _side("browser", [16, 32, 8], [16, 16, 16], Answer("Paris.", 20.0, 3))
    result = WebBench(BenchSpec(), native, browser)
    assert (native.prefill_tok_s, native.decode_tok_s) == (8, 1)
    assert (result.prefill_ratio, result.decode_ratio) == (0.5, 1.0)
    lines = report(result)
    assert lines[-1] == (
        "browser answered 'What is the capital of France?' in 20.0 s (3 tokens, greedy): 'Paris.'"
    )
    assert "disabled use_vulkan_zero_initialize_workgroup_memory_extension" in lines[0]
    assert lines[-2].split() == ["browser/native", "0.500", "1.000"]


def test_each_run_has_its_own_prompt_so_no_prefix_is_cached():
    spec = BenchSpec(prompt_tokens=40, reps=3)
    prompts = [prompt_ids(run, spec, vocab=100) for run in range(4)]
    assert all(len(p) == 40 and max(p) < 100 for p in prompts)
    assert len({tuple(p[:16]) for p in prompts}) == 4  # the first KV page differs


@pytest.mark.parametrize("bad", [{"prompt_tokens": 0}, {"decode_tokens": 0}, {"reps": 0}])
def test_bad_specs_are_refused(bad):
    with pytest.raises(ValueError):
        BenchSpec(**bad)
    with pytest.raises(ValueError, match="Dawn toggle"):
        DawnToggles.parse("disable_robustness", "x;--no-sandbox")


def test_a_sample_without_decode_steps_is_refused():
    with pytest.raises(ValueError, match="no timed decode"):
        Sample(8, 1.0, 0, 0.0)


def test_dawn_toggles_become_chromium_flags():
    default = DawnToggles()
    assert default.disable == SLOW_ON_SWIFTSHADER and not default.enable
    assert DawnToggles.parse("", "").flags == ()
    assert DawnToggles.parse("disable_robustness, disable_workgroup_init", "").flags == (
        "--enable-dawn-features=disable_robustness,disable_workgroup_init",
    )
    assert DawnToggles.parse("a_b", "c").describe() == "enabled a_b; disabled c"


@pytest.mark.browser
def test_a_real_run_compares_both_sides_on_chromiums_swiftshader(browser_ready, webgpu_artifact):
    spec = BenchSpec(prompt_tokens=8, decode_tokens=2, reps=1)
    result = bench_web(webgpu_artifact("q0f32"), spec)
    assert result.native.adapter.startswith("SwiftShader Device (Subzero)")
    assert "swiftshader" in result.browser.adapter.lower()
    for side in (result.native, result.browser):
        [sample] = side.samples
        assert (sample.prefill_tokens, sample.decode_tokens) == (8, 2)
        assert side.answer is not None and side.answer.seconds > 0
    assert result.browser.answer.text == result.native.answer.text  # greedy: the same reply
    assert result.prefill_ratio > 0 and result.decode_ratio > 0
