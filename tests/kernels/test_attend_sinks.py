"""`PagedKVOps.attend` with a sinks parameter in an `nn` graph (the layer's call): compiled for
the CPU and run by the VM, it computes transformers' gpt-oss attention; sinks of the wrong
shape or dtype are refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import spec

from mlcx.kernels.attention import KVLayout, PagedKVOps, StepTensors
from mlcx.kernels.cpu.kv_pages import kv_append_cpu
from tests.support.paged_pages import random_tables, run_prim
from tests.support.sink_attention import exact_rows, hf_attention

H_Q, H_KV, D, PAGE, PAGES = 4, 2, 16, 16, 8
LAYOUT = KVLayout(H_Q, H_KV, D, PAGE, "float32", "float32")
TABLES = ("q_indptr", "page_indptr", "page_values", "last_page_len")


class _Attention(nn.Module):
    def __init__(self, window: int):
        self.kv = PagedKVOps(LAYOUT)
        self.sinks = nn.Parameter((H_Q,), "float32")
        self.window = window

    def forward(self, q, pages, q_indptr, page_indptr, page_values, last_page_len):
        unused = q_indptr  # positions and slots: the append's, not attend's
        step = StepTensors(unused, unused, q_indptr, page_indptr, page_values, last_page_len)
        return self.kv.attend(q, pages, step, False, self.window, 0.0, self.sinks)


def _spec() -> dict:
    shapes = {"q_indptr": ["b1"], "page_indptr": ["b1"], "page_values": ["nnz"]}
    tensors = {name: spec.Tensor(shapes.get(name, ["b"]), "int32") for name in TABLES}
    pages = spec.Tensor(LAYOUT.pages_shape("num_pages"), "float32")
    return {"forward": {"q": spec.Tensor(["t", H_Q, D], "float32"), "pages": pages, **tensors}}


@pytest.mark.parametrize("window", [0, 6])
def test_attend_with_sinks_in_a_graph_matches_transformers(window):
    mod, params = _Attention(window).export_tvm(spec=_spec())
    assert [(name, [int(n) for n in p.shape]) for name, p in params] == [("sinks", [H_Q])]
    lengths, new = [9, 30], [9, 4]
    rng = np.random.default_rng(window)
    tables, slots = random_tables(rng, lengths, PAGES, PAGE)
    keys = [exact_rows(rng, n, H_KV, D) for n in lengths]
    values = [exact_rows(rng, n, H_KV, D) for n in lengths]
    pages = np.zeros(LAYOUT.pages_shape(PAGES), np.float32)
    append = kv_append_cpu(H_KV, D, "float32", PAGE)
    pages = run_prim(append, pages, *map(np.concatenate, (keys, values)), slots.astype("i4"))[0]
    q = rng.standard_normal((sum(new), H_Q, D)).astype(np.float32)
    sinks = np.array([3.0, -2.0, 0.25, 1.0], np.float32)
    arrays = [
        q,
        pages,
        np.concatenate([[0], np.cumsum(new)]),
        np.concatenate([[0], np.cumsum([len(t) for t in tables])]),
        np.array([p for t in tables for p in t]),
        np.array([n - (len(t) - 1) * PAGE for t, n in zip(tables, lengths, strict=True)]),
    ]
    dev = tvm.cpu()
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), dev)
    inputs = [
        tvm.runtime.tensor(a if a.dtype == np.float32 else a.astype("i4"), dev) for a in arrays
    ]
    got = vm["forward"](*inputs, tvm.runtime.tensor(sinks, dev)).numpy()
    want = hf_attention(q, keys, values, sinks, new, window)
    np.testing.assert_allclose(got, want, atol=1e-5)


class _WrongSinks(nn.Module):
    def __init__(self, shape: tuple[int, ...], dtype: str):
        self.kv = PagedKVOps(LAYOUT)
        self.sinks = nn.Parameter(shape, dtype)

    def forward(self, q, pages, q_indptr, page_indptr, page_values, last_page_len):
        step = StepTensors(q_indptr, q_indptr, q_indptr, page_indptr, page_values, last_page_len)
        return self.kv.attend(q, pages, step, False, 0, 0.0, self.sinks)


@pytest.mark.parametrize("shape, dtype", [((H_KV,), "float32"), ((H_Q,), "float16")])
def test_sinks_of_another_shape_or_dtype_are_refused(shape, dtype):
    with pytest.raises(ValueError, match=r"attention sinks must be \[4\] float32"):
        _WrongSinks(shape, dtype).export_tvm(spec=_spec())
