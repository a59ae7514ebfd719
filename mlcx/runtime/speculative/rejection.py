"""Which drafted tokens to keep: speculative rejection sampling (Leviathan et al. 2023, Chen et
al. 2023), so that the kept tokens are distributed exactly as the target model's own samples.

`p[j]` is the target's distribution at draft position j (after the sampler's processing:
penalties, temperature, top-k/top-p/min-p), `q[j]` the proposer's. Draft token d is kept with
probability min(1, p(d) / q(d)); at the first rejection one token is drawn from the residual
max(p - q, 0), renormalized, and the rest of the draft is dropped; when every draft token is
kept, one more is drawn from p[k]. A proposer without a distribution (prompt lookup) proposes
d with certainty, q = one-hot(d): d is kept with probability p(d), else the token is drawn
from p with d removed. Greedy rows (p one-hot at the argmax) keep the longest prefix that
equals the argmax tokens and then take the argmax: token for token what plain greedy
decoding gives, and no random draw is spent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlcx.runtime.sample.sampler import draw


def _residual(p: np.ndarray, q: np.ndarray | None, token: int) -> np.ndarray:
    if q is None:
        residual = p.copy()
        residual[token] = 0.0
    else:
        residual = np.maximum(p - q, 0.0)
    # Rejection has probability sum(max(q - p, 0)) = sum(max(p - q, 0)): a rejected token
    # always leaves residual mass, up to rounding; then p itself is the right answer.
    return residual if residual.sum() > 1e-12 else p


def verify(
    p: np.ndarray,
    draft: Sequence[int],
    q: np.ndarray | None,
    rng: np.random.Generator,
    greedy: bool,
) -> list[int]:
    """The kept draft tokens followed by one new token. `p`: (k + 1, vocab) target
    probabilities; `q`: (k, vocab) proposal probabilities, or None for certain proposals."""
    if len(p) != len(draft) + 1:
        raise ValueError(f"{len(p)} target rows for a draft of {len(draft)} tokens")
    kept: list[int] = []
    for j, token in enumerate(draft):
        if greedy:
            best = int(np.argmax(p[j]))
            if best != token:
                return [*kept, best]
        else:
            q_token = 1.0 if q is None else float(q[j, token])
            if not rng.random() * q_token < p[j, token]:
                return [*kept, draw(_residual(p[j], None if q is None else q[j], token), rng)]
        kept.append(int(token))
    last = int(np.argmax(p[-1])) if greedy else draw(p[-1], rng)
    return [*kept, last]
