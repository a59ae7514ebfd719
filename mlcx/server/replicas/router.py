"""The routing policies (`policies`) as a Ray Serve request router.

Ray Serve calls `choose_replicas` for each request a handle sends; the router runs in the
process holding the handle (the front). It counts the requests it has in flight on each
replica (routed minus completed) as their load, and routes a control call (RouteKey.replica)
to its one replica. Routers register by key so that the front can list the live replicas.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

from mlcx.server.replicas.policies import POLICIES
from mlcx.server.replicas.route_key import RouteKey

_CHOSEN_TTL_S = 30.0


def _routers() -> dict[str, MlcxRequestRouter]:
    """The routers of this process by key. Kept in the module as sys.modules has it now:
    Ray Serve may import this module anew when it deserializes the router class, and the
    front must see the registry the live router wrote to."""
    return sys.modules[__name__].__dict__.setdefault("_ROUTERS", {})


def live_replicas(key: str) -> list[str]:
    """Ids of the replicas the front's router currently routes to (none before its first
    request)."""
    router = _routers().get(key)
    return [] if router is None else sorted(r.unique_id for r in list(router.curr_replicas))


def _route_of(pending: PendingRequest | None) -> RouteKey:
    route = None if pending is None else pending.kwargs.get("route")
    return route if isinstance(route, RouteKey) else RouteKey()


class MlcxRequestRouter(RequestRouter):
    def initialize_state(self, policy: str = "prefix", max_imbalance: int = 4, key: str = ""):
        self._policy = POLICIES[policy](max_imbalance)
        self._in_flight: Counter[str] = Counter()
        # Chosen but not yet routed (Serve first asks the replica whether it has room): a
        # burst of requests is routed concurrently, and each choice must see the ones before.
        self._chosen: dict[str, tuple[str, float]] = {}  # request id -> (replica, when)
        _routers()[key] = self

    async def choose_replicas(
        self,
        candidate_replicas: list[RunningReplica],
        pending_request: PendingRequest | None = None,
    ) -> list[list[RunningReplica]]:
        by_id = {r.replica_id.unique_id: r for r in candidate_replicas}
        if not by_id:
            return []
        route = _route_of(pending_request)
        if route.replica is not None:
            return [[by_id[route.replica]]] if route.replica in by_id else []
        load = self._load(by_id)
        chosen = self._policy.choose(load, route.page_hashes)
        self._policy.record(route.page_hashes, chosen)
        if pending_request is not None:
            self._chosen[pending_request.metadata.internal_request_id] = (chosen, time.monotonic())
        return [[by_id[chosen]]]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result):
        self._chosen.pop(pending_request.metadata.internal_request_id, None)
        self._in_flight[replica_id.unique_id] += 1
        self._policy.record(_route_of(pending_request).page_hashes, replica_id.unique_id)

    def on_request_completed(self, replica_id: ReplicaID, internal_request_id: str):
        self._in_flight[replica_id.unique_id] = max(self._in_flight[replica_id.unique_id] - 1, 0)

    def _load(self, replicas) -> dict[str, int]:
        """Requests in flight on each replica, counting those chosen but not yet routed (a
        choice not routed within _CHOSEN_TTL_S was cancelled meanwhile and is dropped)."""
        now = time.monotonic()
        self._chosen = {k: v for k, v in self._chosen.items() if now - v[1] < _CHOSEN_TTL_S}
        load = {replica: self._in_flight[replica] for replica in replicas}
        for replica, _ in self._chosen.values():
            if replica in load:
                load[replica] += 1
        return load
