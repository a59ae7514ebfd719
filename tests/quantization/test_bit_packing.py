"""mlcx.quantization.bit_packing against numpy's own reduction and a word built value by value;
unpacking gives the values back."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.quantization.bit_packing import or_along, pack_bits, unpack_bits


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_or_along_is_numpy_s_reduction_on_strided_views(dtype, axis):
    rng = np.random.default_rng(3)
    values = rng.integers(0, np.iinfo(dtype).max, size=(4, 6, 3, 5), dtype=dtype)
    view = values.transpose(2, 0, 3, 1)  # not contiguous, as the tiling's transposes are
    ours = or_along(view, axis)
    np.testing.assert_array_equal(ours, np.bitwise_or.reduce(view, axis=axis))
    assert ours.dtype == dtype


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_pack_bits_puts_value_k_at_bits_k_times_width_of_its_word(width):
    rng = np.random.default_rng(width)
    per = 32 // width
    values = rng.integers(0, 1 << width, size=(3, 2 * per), dtype=np.uint8)
    words = pack_bits(values, width)
    assert words.shape == (3, 2) and words.dtype == np.uint32
    for row in range(3):
        for j in range(2):
            word = values[row, j * per : (j + 1) * per]
            expected = sum(int(v) << (i * width) for i, v in enumerate(word))
            assert int(words[row, j]) == expected


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_unpack_bits_reads_back_what_pack_bits_wrote(width):
    rng = np.random.default_rng(10 + width)
    values = rng.integers(0, 1 << width, size=(3, 64), dtype=np.uint8)
    back = unpack_bits(pack_bits(values, width), width)
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, values)
