"""The KV page layout every target, runner and the browser share."""

from __future__ import annotations

import pytest

from mlcx.kernels.kv_layout import NUM_PAGES, KVLayout


def test_pages_shape_puts_the_page_id_first_then_keys_and_values():
    layout = KVLayout(8, 2, 64, 16, "float32", "float16")
    assert layout.pages_shape(NUM_PAGES) == (NUM_PAGES, 2, 2, 16, 64)
    assert layout.pages_shape(5) == (5, 2, 2, 16, 64)


def test_pages_bytes_count_the_cache_dtype():
    f16 = KVLayout(8, 2, 64, 16, "float32", "float16")
    assert f16.pages_bytes(3) == 3 * 2 * 2 * 16 * 64 * 2
    f32 = KVLayout(8, 2, 64, 16, "float32", "float32")
    assert f32.pages_bytes(1) == 2 * f16.pages_bytes(1)


def test_int8_rows_carry_their_float32_scale_and_take_68_of_f16s_128_bytes():
    int8 = KVLayout(8, 2, 64, 16, "float32", "int8")
    f16 = KVLayout(8, 2, 64, 16, "float32", "float16")
    assert int8.pages_shape(5) == (5, 2, 2, 16, 64 + 4)
    assert int8.pages_bytes(3) == 3 * 2 * 2 * 16 * (64 + 4)
    assert f16.pages_bytes(1) / int8.pages_bytes(1) == 128 / 68


def test_int8_needs_a_head_dim_that_keeps_the_scales_aligned():
    with pytest.raises(ValueError, match="head_dim % 4"):
        KVLayout(8, 2, 66, 16, "float32", "int8")
