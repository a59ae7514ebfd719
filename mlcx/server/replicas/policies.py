"""Which replica takes a request, as plain functions of the live replicas, their load
(requests in flight) and the request's page hashes; `router` plugs them into Ray Serve."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Mapping, Sequence


class RoundRobin:
    """Each replica in turn, whatever the prompt: the baseline prefix affinity is measured
    against."""

    def __init__(self, max_imbalance: int = 0):
        self._turn = itertools.count()

    def choose(self, load: Mapping[str, int], page_hashes: Sequence[int]) -> str:
        replicas = sorted(load)
        return replicas[next(self._turn) % len(replicas)]

    def record(self, page_hashes: Sequence[int], replica: str) -> None:
        pass


class PrefixAffinity:
    """The replica that last took the longest prefix of the request's pages, unless it has
    more than `max_imbalance` requests in flight beyond the least loaded replica; otherwise
    (and for a prefix nobody has seen) the least loaded, ties taken in turn.

    Owners are remembered per page hash, most recent first, for `capacity` hashes: the
    replica that took a prefix last is the one most likely to still cache it.
    """

    def __init__(self, max_imbalance: int, capacity: int = 1 << 16):
        self.max_imbalance = max_imbalance
        self._capacity = capacity
        self._owner: OrderedDict[int, str] = OrderedDict()
        self._turn = itertools.count()

    def choose(self, load: Mapping[str, int], page_hashes: Sequence[int]) -> str:
        lightest = min(load.values())
        ties = sorted(r for r, n in load.items() if n == lightest)
        least = ties[next(self._turn) % len(ties)]
        owner = self.owner(load, page_hashes)
        if owner is None or load[owner] - lightest > self.max_imbalance:
            return least
        return owner

    def owner(self, load: Mapping[str, int], page_hashes: Sequence[int]) -> str | None:
        """The live replica that took the longest of these prefixes last, if any."""
        for page_hash in reversed(page_hashes):  # a later page's hash covers all before it
            replica = self._owner.get(page_hash)
            if replica in load:
                return replica
        return None

    def record(self, page_hashes: Sequence[int], replica: str) -> None:
        for page_hash in page_hashes:
            self._owner[page_hash] = replica
            self._owner.move_to_end(page_hash)
        while len(self._owner) > self._capacity:
            self._owner.popitem(last=False)


POLICIES = {"prefix": PrefixAffinity, "round-robin": RoundRobin}
