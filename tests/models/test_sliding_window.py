"""Sliding-window attention: a tiny Mistral with a window of 16 keys over a 100-token sequence
against HF transformers, which masks keys more than 15 positions back.

The prompt is 6x the window, so full attention would differ from windowed attention well past
the tolerance (checked too, so the test cannot pass by ignoring the window). mlcx runs with the
KV manager releasing every page wholly outside the window after each step, as the engine does:
the live pages per sequence stay bounded by the window while the logits still match.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.runtime.kv.sequence_blocks import RELEASED
from tests.support.gguf_vs_hf import GREEDY
from tests.support.harness import Harness, hf_logits
from tests.support.reference_pages import reference_pages
from tests.support.tiny_models import TinySpec, load_reference, sharpened

TOL = 1e-4
WINDOW = 16
PROMPT = 100
SPEC = TinySpec(arch="mistral", kv_heads=2, seed=41, extra={"sliding_window": WINDOW})


def _unit_norms(attn, gen) -> None:
    import torch

    attn.q_proj.weight.mul_(3.0)  # peaked attention: distant keys would matter if seen
    attn.k_proj.weight.add_(0.05 * torch.randn(attn.k_proj.weight.shape, generator=gen))


@pytest.fixture(scope="module")
def mistral(tiny_model, tmp_path_factory):
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    root = tmp_path_factory.mktemp("swa")
    folder = sharpened(tiny_model(SPEC), root / "hf", SPEC.seed, _unit_norms)
    artifact = compile_model(
        CompileRequest(
            model=str(folder), output=root / "art", quantization="q0f32", **reference_pages()
        )
    )
    return folder, artifact


def _prompt(vocab: int) -> list[int]:
    return np.random.default_rng(3).integers(0, vocab, PROMPT).tolist()


def _live_pages(harness: Harness, seq: int) -> int:
    return sum(block != RELEASED for block in harness.kv.page_table(seq))


def test_config_keeps_the_full_context_and_the_window(mistral):
    from mlcx.artifact.config import Artifact

    config = Artifact(mistral[1]).config
    assert config.model.sliding_window == WINDOW and config.model.kv_window == WINDOW
    assert config.context_window == SPEC.context  # no longer capped to the window


def test_chunked_prefill_and_greedy_match_transformers(mistral):
    folder, artifact = mistral
    reference = load_reference(folder)
    assert reference.config.sliding_window == WINDOW
    prompt = _prompt(reference.config.vocab_size)
    want = hf_logits(reference, prompt)
    harness = Harness(artifact, num_blocks=16, release=True)
    got = np.concatenate(
        [harness.step({0: prompt[i : i + 30]}, all_rows=True)[0] for i in range(0, PROMPT, 30)]
    )
    assert np.abs(got - want).max() <= TOL
    seq, row = list(prompt), got[-1]
    for _ in range(GREEDY):
        want_row = hf_logits(reference, seq)[-1]
        assert np.abs(row - want_row).max() <= TOL
        seq.append(int(np.argmax(row)))
        row = harness.decode({0: seq[-1]})[0]
        assert _live_pages(harness, 0) <= WINDOW // harness.kv.page_size + 2
    assert harness.kv.pool.num_used == _live_pages(harness, 0)


def test_one_prefill_matches_and_full_attention_would_not(mistral):
    folder, artifact = mistral
    reference = load_reference(folder)
    prompt = _prompt(reference.config.vocab_size)
    got = Harness(artifact, num_blocks=16).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL
    reference.config.sliding_window = None
    full = hf_logits(reference, prompt)
    assert np.abs(got[WINDOW:] - full[WINDOW:]).max() > 100 * TOL
