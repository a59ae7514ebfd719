"""The allowed-token masks of one step's constrained samples, and applying them to logits.

Masks are filled while the model runs: `start` hands the fill to a worker thread before the
forward and `apply` joins it before sampling. llguidance drops the GIL while it fills, so the
fill overlaps the forward wherever the runner leaves the GIL free or the CPU has a core to
spare. Steps without a constrained sample build nothing.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import llguidance
import llguidance.numpy
import numpy as np

from mlcx.runtime.constraint_matcher import ConstraintMatcher

_executor: llguidance.LLExecutor | None = None
_executor_lock = threading.Lock()


def _shared_executor() -> llguidance.LLExecutor:
    """llguidance's thread pool for filling several masks at once, made on first use."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = llguidance.LLExecutor()
        return _executor


class TokenMasks:
    """Bit `t % 32` of word `t // 32` in row i of `bits` allows token t for sample `rows[i]`."""

    def __init__(
        self, rows: Sequence[int], matchers: Sequence[ConstraintMatcher], vocab_size: int
    ) -> None:
        if len(rows) != len(matchers):
            raise ValueError(f"{len(rows)} rows for {len(matchers)} matchers")
        self.rows = list(rows)
        self.matchers = list(matchers)
        self.bits = np.zeros((len(rows), (vocab_size + 31) // 32), dtype=np.int32)
        self._worker: threading.Thread | None = None
        self._error: BaseException | None = None

    def fill(self) -> None:
        if len(self.matchers) == 1:
            self.matchers[0].fill(self.bits, 0)
            return
        pairs = [(m.ll, i) for i, m in enumerate(self.matchers)]
        llguidance.numpy.fill_next_token_bitmask_par(_shared_executor(), pairs, self.bits)

    def start(self) -> TokenMasks:
        """Fill in a worker thread; `apply` waits for it."""
        self._worker = threading.Thread(target=self._fill_in_worker, name="mlcx-masks", daemon=True)
        self._worker.start()
        return self

    def _fill_in_worker(self) -> None:
        try:
            self.fill()
        except BaseException as err:  # re-raised by the thread that applies the masks
            self._error = err

    def allowed(self) -> np.ndarray:
        """(len(rows), 32 * words) of 0/1: which tokens each constrained sample may take."""
        if self._worker is not None:
            self._worker.join()
            self._worker = None
        if self._error is not None:
            raise self._error
        words = self.bits if sys.byteorder == "little" else self.bits.byteswap()
        return np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")

    def apply(self, x: np.ndarray) -> None:
        """Set the disallowed logits of the constrained rows of `x` (b, vocab) to -inf."""
        allowed = self.allowed()
        width = min(allowed.shape[1], x.shape[1])
        sub = x[self.rows]
        sub[:, :width][allowed[:, :width] == 0] = -np.inf
        sub[:, width:] = -np.inf  # logits past the tokenizer's vocabulary (padding)
        x[self.rows] = sub
