"""What sampling remembers about one generated sequence: its seeded generator, the prompt and
output token ids the penalties look at, and the matcher of its constraint, if any."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.matcher import ConstraintMatcher


def _token_ids(name: str, ids: Sequence[int]) -> np.ndarray:
    arr = np.asarray(ids, dtype=np.int64).reshape(-1)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must be token ids >= 0, got {int(arr.min())}")
    return arr


class SamplingState:
    """Sampling state of one generated sequence (one choice of a request).

    The generator is PCG64 seeded with `params.seed + choice_index`, so the choices of an
    `n > 1` request differ but each is reproducible; with `seed=None` it draws from OS entropy.
    Each sampled (non-greedy) step consumes exactly one uniform draw, so the tokens depend only
    on the seed and the logits, never on which other sequences share the batch.

    A constrained sequence carries its own `matcher`, fed every appended token; a state rebuilt
    with `output_ids` (a fresh matcher and the tokens so far) stands where the old one stood.
    """

    def __init__(
        self,
        params: SamplingParams,
        prompt_ids: Sequence[int] = (),
        *,
        choice_index: int = 0,
        output_ids: Sequence[int] = (),
        matcher: ConstraintMatcher | None = None,
    ) -> None:
        if not 0 <= choice_index < params.n:
            raise ValueError(f"choice_index must be in [0, {params.n - 1}], got {choice_index}")
        self.params = params
        self.choice_index = choice_index
        seed = None if params.seed is None else params.seed + choice_index
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.prompt_ids = _token_ids("prompt_ids", prompt_ids)
        self.prompt_ids.flags.writeable = False
        self._prompt_unique = np.unique(self.prompt_ids)
        self._max_id = int(self.prompt_ids.max()) if self.prompt_ids.size else -1
        self.output_ids: list[int] = []
        self._counts: dict[int, int] = {}
        self._checked_vocab = 0
        self.matcher = matcher
        for token in _token_ids("output_ids", output_ids).tolist():
            self.append(token)

    @classmethod
    def for_request(cls, params: SamplingParams, prompt_ids: Sequence[int]) -> list[SamplingState]:
        """One state per choice of the request, choice i seeded with `seed + i`."""
        return [cls(params, prompt_ids, choice_index=i) for i in range(params.n)]

    def append(self, token_id: int) -> None:
        """Record a generated token; the caller does this after `sample`."""
        token_id = int(token_id)
        if token_id < 0:
            raise ValueError(f"token_id must be >= 0, got {token_id}")
        self.output_ids.append(token_id)
        self._counts[token_id] = self._counts.get(token_id, 0) + 1
        self._max_id = max(self._max_id, token_id)
        if self.matcher is not None:
            self.matcher.advance(token_id)

    def drop_last(self, count: int) -> None:
        """Forget the last `count` appended tokens (drafted tokens tried for the penalties of
        the rows after them). Not for a constrained state: its matcher does not go back."""
        if self.matcher is not None:
            raise ValueError("a constrained sampling state cannot drop tokens")
        for _ in range(count):
            token = self.output_ids.pop()
            self._counts[token] -= 1
            if not self._counts[token]:
                del self._counts[token]

    @property
    def constraint_done(self) -> bool:
        """The sequence's constraint is complete: it allows nothing more but EOS."""
        return self.matcher is not None and self.matcher.done

    def output_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(distinct output token ids, how often each was generated)."""
        ids = np.fromiter(self._counts.keys(), dtype=np.int64, count=len(self._counts))
        counts = np.fromiter(self._counts.values(), dtype=np.float64, count=len(self._counts))
        return ids, counts

    def seen_ids(self) -> np.ndarray:
        """Distinct token ids of the prompt and the output."""
        return np.union1d(self._prompt_unique, self.output_counts()[0])

    def check_vocab(self, vocab_size: int) -> None:
        """Raise ValueError if a token id of the params, prompt or output is >= vocab_size."""
        if vocab_size != self._checked_vocab:
            self.params.validate_vocab(vocab_size)
            self._checked_vocab = vocab_size
        if self._max_id >= vocab_size:
            raise ValueError(
                f"prompt/output token ids must be in [0, {vocab_size - 1}], got {self._max_id}"
            )
