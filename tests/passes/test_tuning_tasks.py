"""Which kernels `mlcx tune` can measure: a dynamic dimension is set to the decode step's one
token; a shape that stays symbolic (an expression of two variables) is no task."""

from __future__ import annotations

from tvm.script import tirx as T

from mlcx.passes.tuning.tasks import TUNED_TOKENS, specialize


@T.prim_func
def _rows(a: T.handle, b: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (n, 8), "float32")
    B = T.match_buffer(b, (n, 8), "float32")
    for i, j in T.grid(n, 8):
        B[i, j] = A[i, j]


@T.prim_func
def _product(a: T.handle, b: T.handle):
    n, m = T.int64(), T.int64()
    A = T.match_buffer(a, (n * m,), "float32")
    B = T.match_buffer(b, (n * m,), "float32")
    for i in range(n * m):
        B[i] = A[i]


def test_a_dynamic_dimension_is_measured_at_one_token():
    workload = specialize(_rows)
    shapes = [[int(d) for d in p.ty.shape] for p in workload["main"].params]
    assert shapes == [[TUNED_TOKENS, 8], [TUNED_TOKENS, 8]]


def test_a_shape_that_stays_symbolic_is_no_task():
    assert specialize(_product) is None
