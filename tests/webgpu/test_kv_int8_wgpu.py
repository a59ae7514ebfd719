"""`--kv-dtype int8` in a WebGPU plan (lavapipe here) against the CPU artifact with the same KV
cache: both quantize each key and value row to int8 with a float32 scale, the GPU's held as
uint32 words (mlcx.kernels.kv_layout), and the greedy tokens of a prompt agree step by step."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.harness import Harness
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=5)
STEPS = 24
# int8 moves this model's logits by ~4e-4 from f32 pages; the two targets' int8 caches store the
# same codes and scales (measured: logits ~1e-7 apart), so a GPU cache that lost its scales or
# kept floats would fail this
TOL = 1e-4


@pytest.fixture(scope="module")
def pair(adapter, compiled):
    cpu = compiled(SPEC, "q0f32", kv_dtype="int8")
    web = compiled(SPEC, "q0f32", target="webgpu", kv_dtype="int8")
    return Harness(cpu, num_blocks=32), Harness(web, num_blocks=32)


def test_pages_are_words_of_the_cpu_pages_bytes(pair):
    cpu, web = pair
    (cpu_pages, *_), (web_pages, *_) = cpu.runner.kv_pages, web.runner.kv_pages
    assert str(cpu_pages.dtype) == "int8" and web_pages.dtype == "uint32"
    assert web_pages.nbytes == cpu_pages.numpy().nbytes
    assert web_pages.shape[-1] * 4 == cpu_pages.shape[-1]


def test_greedy_tokens_equal_the_cpu_int8_cache(pair):
    """A ragged prefill of two prompts (several pages each, a partial last page), then greedy
    decode of both: the same token at every step, logits within the int8 tolerance."""
    cpu, web = pair
    rng, vocab = np.random.default_rng(4), 380
    seqs = {1: rng.integers(3, vocab, 27).tolist(), 2: rng.integers(3, vocab, 40).tolist()}
    want, got = cpu.step(seqs, all_rows=True), web.step(seqs, all_rows=True)
    for _ in range(STEPS):
        tokens = {}
        for seq in seqs:
            assert np.abs(got[seq] - want[seq]).max() <= TOL, seq
            tokens[seq] = int(np.argmax(want[seq][-1]))
            assert int(np.argmax(got[seq][-1])) == tokens[seq]
        want = {s: row[None] for s, row in cpu.decode(tokens).items()}
        got = {s: row[None] for s, row in web.decode(tokens).items()}
