"""Host-side int32 inputs handed to compiled CPU functions without a copy.

`tvm.runtime.tensor(array)` allocates and copies (~25 us each); a decode step passes seven
small page-table arrays, so on CPU they are written once into 64-byte aligned numpy buffers
(the alignment TVM's kernels assume) and shared through DLPack, whose capsule keeps the numpy
buffer alive as long as the tensor.
"""

from __future__ import annotations

import numpy as np
import tvm

ALIGN = 64


def aligned_int32(values) -> np.ndarray:
    """A C-contiguous int32 copy of `values` whose data starts on a 64-byte boundary."""
    src = np.asarray(values, dtype=np.int32)
    pad = ALIGN // 4
    buf = np.empty(src.size + pad, dtype=np.int32)
    start = (-buf.ctypes.data % ALIGN) // 4
    out = buf[start : start + src.size].reshape(src.shape)
    out[...] = src
    return out


def host_int32(values) -> tvm.runtime.Tensor:
    """A CPU tensor viewing an aligned int32 copy of `values` (no TVM allocation)."""
    array = aligned_int32(values)
    if not array.size:  # numpy gives empty views an unaligned data pointer
        return tvm.runtime.tensor(array)
    return tvm.runtime.from_dlpack(array)
