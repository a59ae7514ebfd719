"""The allowed-token masks of one step's constrained samples, and applying them to logits.

The masks are filled right before sampling, not in a thread while the model runs, because on
CPU that does not help. Measured on the default model (SmolLM2-135M, 2 cores, 16 JSON-schema
streams): filling takes about 0.05 ms a sequence and masking the logits as much, against an
83 ms step; a thread started and joined per step costs 0.2 ms, and a Python thread busy beside
the forward takes a core from TVM's thread pool (TVM drops the GIL during the forward), which
slowed batch-1 decode from 107 to 75 tokens/s. A GPU runner, leaving the CPU idle, may revisit
this. Steps without a constrained sample build nothing.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import llguidance
import llguidance.numpy
import numpy as np

from mlcx.runtime.structured.matcher import ConstraintMatcher

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
        self.vocab_size = vocab_size
        self.bits = np.zeros((len(rows), (vocab_size + 31) // 32), dtype=np.int32)

    def fill(self) -> TokenMasks:
        if len(self.matchers) == 1:
            self.matchers[0].fill(self.bits, 0)
        else:
            pairs = [(m.ll, i) for i, m in enumerate(self.matchers)]
            llguidance.numpy.fill_next_token_bitmask_par(_shared_executor(), pairs, self.bits)
        return self

    def allowed(self) -> np.ndarray:
        """(len(rows), vocab_size) bools: which tokens each constrained sample may take."""
        words = self.bits if sys.byteorder == "little" else self.bits.byteswap()
        unpacked = np.unpackbits(
            words.view(np.uint8), axis=1, count=self.vocab_size, bitorder="little"
        )
        return unpacked.view(bool)

    def apply(self, x: np.ndarray) -> None:
        """Set the disallowed logits of the constrained rows of `x` (b, vocab) to -inf."""
        width = min(self.vocab_size, x.shape[1])
        disallowed = ~self.allowed()[:, :width]
        for i, row in enumerate(self.rows):
            np.copyto(x[row, :width], -np.inf, where=disallowed[i])
            x[row, width:] = -np.inf  # logits past the tokenizer's vocabulary (padding)
