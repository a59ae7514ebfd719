"""The KV capacity `mlcx bench profile` prints: whole blocks of the real bytes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mlcx.bench.measure.kv_capacity import kv_capacity
from mlcx.kernels.kv_layout import KVLayout


def test_int8_fits_128_over_68_of_f16s_sequences_in_one_budget():
    # SmolLM2-135M's attention: 9 query heads, 3 kv heads of 64, 30 layers, pages of 16
    f16, int8 = (KVLayout(9, 3, 64, 16, "float32", dtype) for dtype in ("float16", "int8"))
    budget = 1 << 30
    a, b = (kv_capacity(_config(layout, 30), budget, 2048) for layout in (f16, int8))
    assert (a.block_bytes, b.block_bytes) == (30 * 2 * 3 * 16 * 64 * 2, 30 * 2 * 3 * 16 * 68)
    assert (a.blocks, b.blocks) == (budget // a.block_bytes, budget // b.block_bytes)
    assert (a.sequences, b.sequences) == (a.blocks // 128, b.blocks // 128)
    assert b.blocks / a.blocks == pytest.approx(128 / 68, rel=1e-3)
    assert "22 concurrent 2048-token sequences" in a.line()
    assert "42 concurrent 2048-token sequences" in b.line()


def _config(layout: KVLayout, num_layers: int) -> SimpleNamespace:
    """What kv_capacity reads of an ArtifactConfig, derived as ArtifactConfig derives it."""
    return SimpleNamespace(
        kv_block_bytes=num_layers * layout.pages_bytes(1),
        page_size=layout.page_size,
        cache_dtype=layout.cache_dtype,
    )
