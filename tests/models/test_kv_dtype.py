"""A float16 or int8 KV cache under float32 math (`--kv-dtype float16|int8`, CPU): the pages
really are f16 / int8, and the logits stay near HF transformers' float32 ones, step after step."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.harness import Harness, hf_logits
from tests.support.tiny_models import TinySpec, load_reference

SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=5)
# f16 keeps 11 significant bits: K and V move by ~5e-4 relative; this model's logits by ~2e-5
# (f32 pages: ~1e-6)
TOL = 1e-3
# int8 rounds each element to 1/254 of its row's largest magnitude: this model's logits move
# by ~3.6e-4 (measured), ~18x f16's
INT8_TOL = 2e-3


@pytest.mark.parametrize("kv_dtype, seed, tol", [("float16", 3, TOL), ("int8", 4, INT8_TOL)])
def test_pages_track_the_f32_reference(tiny_model, compiled, kv_dtype, seed, tol):
    ref = load_reference(tiny_model(SPEC))
    harness = Harness(compiled(SPEC, "q0f32", kv_dtype=kv_dtype), num_blocks=32)
    assert harness.artifact.config.kv_dtype == kv_dtype
    assert {str(p.dtype) for p in harness.runner.kv_pages} == {kv_dtype}
    rng, vocab = np.random.default_rng(seed), ref.config.vocab_size
    seqs = {1: rng.integers(0, vocab, 27).tolist(), 2: rng.integers(0, vocab, 40).tolist()}
    got = harness.step(seqs, all_rows=True)
    worst = 0.0
    for _ in range(4):
        tokens = {}
        for seq, logits in got.items():
            want = hf_logits(ref, seqs[seq])[-len(logits) :]
            worst = max(worst, float(np.abs(logits - want).max()))
            tokens[seq] = int(np.argmax(want[-1]))
            assert int(np.argmax(logits[-1])) == tokens[seq]
            seqs[seq].append(tokens[seq])
        got = {seq: row[None] for seq, row in harness.decode(tokens).items()}
    assert worst <= tol


def test_unknown_kv_dtype_is_refused():
    with pytest.raises(ValueError, match="KV cache dtype must be one of float16, float32, int8"):
        CompileRequest("m", kv_dtype="int4")
