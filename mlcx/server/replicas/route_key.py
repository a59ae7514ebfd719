"""What a request is routed by: the chained hashes of its prompt's first full KV pages, the
same hashes the engine's prefix cache gives those pages (mlcx.runtime.kv.prefix_hash), or
the one replica a control call (stats, pid) is for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlcx.runtime.kv.prefix_hash import hash_block


@dataclass(frozen=True)
class RouteKey:
    page_hashes: tuple[int, ...] = ()
    replica: str | None = None  # a control call for this replica only


def prefix_hashes(prompt_ids: Sequence[int], page_size: int, max_pages: int) -> tuple[int, ...]:
    """Hashes of the prompt's full pages, first to last, as the engine's prefix cache looks
    them up: (n - 1) // page_size pages at most, since the last prompt token is never cached."""
    pages = min((len(prompt_ids) - 1) // page_size, max_pages)
    hashes: list[int] = []
    for i in range(pages):
        parent = hashes[-1] if hashes else None
        hashes.append(hash_block(parent, prompt_ids[i * page_size : (i + 1) * page_size]))
    return tuple(hashes)
