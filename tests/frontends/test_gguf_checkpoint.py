"""mlcx opens a GGUF through gguf's own reader over a plain view of its memory map: the same
metadata and tensors as `gguf.GGUFReader` reads, the file still mapped rather than read."""

from __future__ import annotations

import gguf
import numpy as np

from mlcx.frontends.gguf.checkpoint import open_gguf
from tests.support.default_model import default_gguf


def test_the_default_file_reads_as_gguf_s_own_reader_reads_it():
    path = default_gguf()
    ours, theirs = open_gguf(path), gguf.GGUFReader(str(path))
    assert list(ours.fields) == list(theirs.fields)
    for name, field in theirs.fields.items():
        assert ours.fields[name].contents() == field.contents(), name
    assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
    for mine, reference in zip(ours.tensors, theirs.tensors, strict=True):
        assert mine.tensor_type == reference.tensor_type
        np.testing.assert_array_equal(mine.data, reference.data)
    base = ours.tensors[0].data
    while base.base is not None and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)  # the tensors are views of the mapped file
