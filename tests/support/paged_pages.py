"""Random page tables for kernel tests of the paged KV cache, and running a kernel on numpy
arrays."""

from __future__ import annotations

import numpy as np
import tvm

from tests.support.kernel_cache import cpu_module


def run_prim(func, *arrays, target=None) -> list[np.ndarray]:
    """Compile a PrimFunc for the host (or `target`), run it on copies of `arrays`, return
    them all afterwards (outputs included). Lowered by the TIR pipeline the artifacts use,
    once (tests.support.kernel_cache)."""
    lib = cpu_module(func, target or tvm.target.Target({"kind": "llvm"}))
    tensors = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in arrays]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def random_tables(rng, lengths: list[int], pages: int, page: int):
    """Each sequence of `lengths` tokens on pages drawn at random from `pages` pages of `page`
    slots: (the page tables, the slot of every token, sequences one after another)."""
    order = rng.permutation(pages)
    tables, used = [], 0
    for n in lengths:
        tables.append(order[used : used + -(-n // page)].tolist())
        used += len(tables[-1])
    slots = np.array(
        [
            t[j // page] * page + j % page
            for t, n in zip(tables, lengths, strict=True)
            for j in range(n)
        ]
    )
    return tables, slots
