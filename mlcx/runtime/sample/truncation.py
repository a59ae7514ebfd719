"""The distributions sampled rows draw from: temperature-scaled logits truncated by top_k, then
top_p, then min_p, computed for all sampled rows of a step together.

Each filter is a threshold on the sorted weights, so tokens tied at a cutoff are all kept (the
top_k behaviour of Hugging Face, extended to top_p). The weights of a row are exactly those a
row sampled alone gets: numpy's element-wise and row-wise reductions over a (rows, vocab)
array round like the same operations on each row, and every cumulative sum runs over one
row's tokens in the same order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from mlcx.runtime.sample.params import SamplingParams

# (token ids, or None for the whole vocabulary; their positive relative weights)
Distribution = tuple[np.ndarray | None, np.ndarray]

_FIRST_FLOOR = 1e-3  # relative to the top weight: the nucleus candidates tried first


def _nucleus_cutoff(desc: np.ndarray, target: float) -> float | None:
    """Smallest kept weight if the sorted weights `desc` reach `target` mass, else None."""
    cum = np.cumsum(desc, dtype=np.float64)
    if cum[-1] < target:
        return None
    # A token is kept while the mass ranked above it is still below the target.
    return float(desc[np.searchsorted(cum[:-1], target, side="left")])


def _top_p_cutoff(weights: np.ndarray, top_p: float) -> float:
    """Smallest weight in the shortest most-likely prefix holding >= top_p of the mass."""
    target = top_p * float(weights.sum(dtype=np.float64))
    desc = np.sort(weights)[::-1]
    cutoff = _nucleus_cutoff(desc, target)
    return float(desc[-1]) if cutoff is None else cutoff  # None only by rounding: keep all


def _segments(rows: np.ndarray, n: int) -> np.ndarray:
    """Start offsets (n + 1) of each row's entries in row-sorted `rows`."""
    return np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n))))


def _at_least(w: np.ndarray, floors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the entries of `w` at or above their row's floor, row by row.
    One flat search: numpy's 2-D nonzero is about ten times slower."""
    flat = np.flatnonzero(w >= floors.astype(np.float32)[:, None])
    return np.divmod(flat, w.shape[1])


def _candidates(w: np.ndarray, floors: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(token ids, weights) of each row's weights at or above its floor."""
    rows, cols = _at_least(w, floors)
    vals = w[rows, cols]
    starts = _segments(rows, w.shape[0])
    return [(cols[a:b], vals[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)]


_Nucleus = tuple[float, np.ndarray, np.ndarray]  # top_p cutoff; token ids and weights above


def _nuclei(w: np.ndarray, top_p: np.ndarray) -> list[_Nucleus]:
    """`_top_p_cutoff` of every row of the weights `w` (rows, vocab), sorting only candidates
    that hold the nucleus, with those candidates.

    Tokens below (1 - top_p) * mass / vocab together hold less than 1 - top_p of the mass, so
    the tokens at or above it reach top_p and hold the nucleus. Tokens at 1/1000 of the top
    weight usually do too, and are fewer: they are tried first. Any candidate set that
    reaches the target gives the cutoff of a full sort (the sorted prefix sums are the same);
    a row whose candidates fall short even so, by rounding, gets the full sort.
    """
    n, vocab = w.shape
    total = w.sum(axis=1, dtype=np.float64)
    safe = (1.0 - top_p) * total / vocab
    out: list = [None] * n
    todo = np.arange(n)
    for floors in (np.maximum(safe, _FIRST_FLOOR), safe):
        sub = w if todo.size == n else w[todo]
        for i, (ids, vals) in zip(todo, _candidates(sub, floors[todo]), strict=True):
            cutoff = _nucleus_cutoff(np.sort(vals)[::-1], top_p[i] * total[i])
            if cutoff is not None:
                out[i] = (cutoff, ids, vals)
        todo = np.array([i for i in todo if out[i] is None], np.int64)
        if not todo.size:
            return out
    for i in todo:
        out[i] = (_top_p_cutoff(w[i], float(top_p[i])), np.arange(vocab), w[i])
    return out


def _truncate(ids: np.ndarray | None, weights: np.ndarray, p: SamplingParams) -> Distribution:
    """top_p then min_p on one row's candidates (the row sampled alone)."""
    cutoff = p.min_p  # min_p times the top weight 1; top_p never removes the top token
    if p.top_p < 1.0:
        cutoff = max(cutoff, _top_p_cutoff(weights, p.top_p))
    if cutoff > 0.0:
        keep = np.flatnonzero(weights >= cutoff)
        ids, weights = (keep if ids is None else ids[keep]), weights[keep]
    return ids, weights


def _top_k_rows(z: np.ndarray, rows: list[int], params: Sequence[SamplingParams], out) -> None:
    """Rows with top_k: the k best (ties kept) as float64 weights, then top_p and min_p."""
    by_k: dict[int, list[int]] = defaultdict(list)
    for i in rows:
        by_k[params[i].top_k].append(i)
    vocab = z.shape[1]
    for k, group in by_k.items():
        sub = z[group]
        kth = np.partition(sub, vocab - k, axis=1)[:, vocab - k]
        for i, (ids, vals) in zip(group, _candidates(sub, kth), strict=True):
            out[i] = _truncate(ids, np.exp(vals, dtype=np.float64), params[i])


def _whole_vocab_rows(z: np.ndarray, rows: list[int], params, out) -> None:
    """Rows without top_k: float32 weights over the vocabulary, then top_p and min_p."""
    w = z if len(rows) == z.shape[0] else z[rows]
    np.exp(w, out=w)
    p = [params[i] for i in rows]
    nucleus = [j for j, q in enumerate(p) if q.top_p < 1.0]
    if nucleus:
        sub = w if len(nucleus) == len(rows) else w[nucleus]
        found = _nuclei(sub, np.array([p[j].top_p for j in nucleus]))
        for j, (cutoff, ids, vals) in zip(nucleus, found, strict=True):
            # min_p times the top weight 1; top_p never removes the top token
            keep = vals >= np.float32(max(cutoff, p[j].min_p))
            out[rows[j]] = (ids[keep], vals[keep])
    min_p = [j for j, q in enumerate(p) if q.top_p == 1.0 and q.min_p > 0.0]
    if min_p:
        floors = np.array([p[j].min_p for j in min_p])
        for j, kept in zip(min_p, _candidates(w[min_p], floors), strict=True):
            out[rows[j]] = kept
    for j, q in enumerate(p):
        if q.top_p == 1.0 and q.min_p == 0.0:
            out[rows[j]] = (None, w[j])


def distributions(z: np.ndarray, params: Sequence[SamplingParams]) -> list[Distribution]:
    """(token ids or None for all, weights proportional to their probabilities) per row of
    `z`, processed logits over each row's temperature shifted so that each row's max is 0;
    `z` is overwritten. The weights are relative: each row's top token weighs exp(0) = 1."""
    out: list = [None] * len(params)
    vocab = z.shape[1]
    top_k = [i for i, p in enumerate(params) if 0 < p.top_k < vocab]
    rest = [i for i, p in enumerate(params) if not 0 < p.top_k < vocab]
    if top_k:
        _top_k_rows(z, top_k, params, out)
    if rest:
        _whole_vocab_rows(z, rest, params, out)
    return out
