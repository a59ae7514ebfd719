"""Compiled tiny models against HF transformers (CPU, fp32): the foundation's correctness bar.

Each architecture is built at random in HF format (tied and untied heads, GQA and MHA),
compiled for CPU at q0f32, and run through mlcx's own KV cache manager with explicit page
tables: prefill, 10 decode steps, a ragged batch, chunked prefill over a cached prefix, and a
forked (prefix-shared, copy-on-write) sequence. fp32 logits must match to 1e-4.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.harness import Harness, hf_logits
from tests.support.tiny_models import TinySpec, load_reference

TOL = 1e-4
SPECS = [
    TinySpec(arch="llama", tie=False, kv_heads=2),
    TinySpec(arch="llama", tie=True, kv_heads=4, seed=1),
    TinySpec(arch="mistral", tie=False, kv_heads=1, seed=2),
    TinySpec(arch="qwen2", tie=True, kv_heads=2, seed=3),
    TinySpec(
        arch="llama",
        seed=5,
        context=512,
        extra={
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 500000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            }
        },
    ),
]


def _tokens(seed: int, n: int, vocab: int) -> list[int]:
    return np.random.default_rng(seed).integers(0, vocab, n).tolist()


@pytest.fixture(scope="module", params=SPECS, ids=lambda s: s.key)
def pair(request, tiny_model, compiled):
    spec = request.param
    return Harness(compiled(spec, "q0f32"), num_blocks=48), load_reference(tiny_model(spec))


def test_prefill_all_rows_and_decode(pair):
    harness, ref = pair
    vocab = ref.config.vocab_size
    prompt = _tokens(0, 37, vocab)  # crosses two page boundaries (page size 16)
    got = harness.step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(ref, prompt)).max() <= TOL
    seq = list(prompt)
    for token in _tokens(1, 10, vocab):
        seq.append(token)
        got = harness.decode({0: token})[0]
        assert np.abs(got - hf_logits(ref, seq)[-1]).max() <= TOL


def test_ragged_batch_prefill_then_batched_decode(pair):
    harness, ref = pair
    vocab = ref.config.vocab_size
    prompts = {1: _tokens(2, 5, vocab), 2: _tokens(3, 23, vocab), 3: _tokens(4, 16, vocab)}
    got = harness.step(prompts, all_rows=True)
    for seq, prompt in prompts.items():
        assert np.abs(got[seq] - hf_logits(ref, prompt)).max() <= TOL
    nxt = {seq: _tokens(10 + seq, 1, vocab)[0] for seq in prompts}
    got = harness.decode(nxt)
    for seq, prompt in prompts.items():
        assert np.abs(got[seq] - hf_logits(ref, prompt + [nxt[seq]])[-1]).max() <= TOL


def test_chunked_prefill_over_cached_prefix(pair):
    harness, ref = pair
    vocab = ref.config.vocab_size
    prompt = _tokens(5, 41, vocab)
    for start, end in [(0, 13), (13, 30), (30, 41)]:  # chunks end mid-page and on a page edge
        got = harness.step({7: prompt[start:end]}, all_rows=True)[7]
        assert np.abs(got - hf_logits(ref, prompt[:end])[start:end]).max() <= TOL


def test_forked_sequence_shares_prefix_copy_on_write(pair):
    harness, ref = pair
    vocab = ref.config.vocab_size
    prompt = _tokens(6, 21, vocab)  # last page partially filled: the fork shares it
    harness.step({20: prompt})
    harness.fork(20, 21)
    shared = harness.kv.page_table(20)
    assert harness.kv.page_table(21) == shared
    a, b = _tokens(7, 1, vocab)[0], _tokens(8, 1, vocab)[0]
    got = harness.decode({20: a, 21: b})
    assert harness.kv.page_table(20)[:-1] == harness.kv.page_table(21)[:-1] == shared[:-1]
    assert harness.kv.page_table(20)[-1] != harness.kv.page_table(21)[-1]
    assert np.abs(got[20] - hf_logits(ref, prompt + [a])[-1]).max() <= TOL
    assert np.abs(got[21] - hf_logits(ref, prompt + [b])[-1]).max() <= TOL
    more = harness.step({21: _tokens(9, 6, vocab)}, all_rows=True)[21]
    expect = hf_logits(ref, prompt + [b] + _tokens(9, 6, vocab))[-6:]
    assert np.abs(more - expect).max() <= TOL
