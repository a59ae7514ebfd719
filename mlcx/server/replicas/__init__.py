"""`mlcx serve --replicas N`: engine replicas on Ray Serve behind the one FastAPI app.

Ray (the optional extra `mlcx[replicas]`) is imported only when replicas are started, so the
rest of the server runs without it. The pieces: `config` (the validated options),
`route_key` and `policies` (prefix affinity, round-robin; plain Python), `router` (those
policies as a Ray Serve RequestRouter), `deployment` (one engine per replica), `client` (the
front's EngineClient over the replica handle), `launch` (Ray and Serve start and stop).
"""

from mlcx.server.replicas.config import ROUTING_POLICIES, ReplicaConfig

__all__ = ["ROUTING_POLICIES", "ReplicaConfig"]
