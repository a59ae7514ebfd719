"""Prompt lookup (n-gram) proposals: find the sequence's last n tokens earlier in its own
prompt and output and propose what followed them there. No model; it pays off when the output
repeats its input (editing, summarizing with quotes, code)."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from mlcx.runtime.speculative.proposer import Draft, DraftRequest

MAX_NGRAM = 4  # the longest suffix looked up first: a longer match predicts better
MIN_NGRAM = 2  # a single-token match is too weak a signal for the verification it costs


def lookup(tokens: np.ndarray, k: int, max_n: int = MAX_NGRAM, min_n: int = MIN_NGRAM) -> tuple:
    """Up to k tokens that followed the most recent earlier occurrence of the longest suffix
    of `tokens` (max_n down to min_n tokens long); () when none occurs."""
    for n in range(min(max_n, len(tokens) - 1), min_n - 1, -1):
        # windows starting before len - n: every occurrence but the suffix itself
        windows = sliding_window_view(tokens[:-1], n)
        hits = np.flatnonzero((windows == tokens[-n:]).all(axis=1))
        if hits.size:
            start = int(hits[-1]) + n
            return tuple(int(t) for t in tokens[start : start + k])
    return ()


class NgramProposer:
    def propose(self, requests: list[DraftRequest]) -> dict[int, Draft]:
        drafts = {}
        for req in requests:
            found = lookup(np.asarray(req.token_ids, dtype=np.int64), req.k)
            if found:
                drafts[req.seq_id] = Draft(found)
        return drafts

    def release(self, live: Collection[int]) -> None:
        pass  # keeps nothing between steps
