"""The options of `mlcx serve --replicas`, validated once here."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlcx.runtime.core.config import EngineConfig
from mlcx.server.replicas.policies import POLICIES

ROUTING_POLICIES = tuple(POLICIES)


@dataclass(frozen=True)
class ReplicaConfig:
    replicas: int = 2
    threads_per_replica: int = 1
    ray_address: str | None = None  # None: start a local Ray instance; "auto": join this node's
    routing: str = "prefix"
    max_imbalance: int = 4  # in-flight requests the prefix owner may exceed the least loaded by
    route_pages: int = 64  # full KV pages of a prompt hashed for routing, at most
    start_retries: int = 3  # launches of a request whose replica died before its first output
    engine: EngineConfig = field(default_factory=EngineConfig)
    app_name: str = "mlcx"

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"--replicas must be >= 1, got {self.replicas}")
        if self.threads_per_replica < 1:
            raise ValueError(f"--threads-per-replica must be >= 1, got {self.threads_per_replica}")
        if self.routing not in ROUTING_POLICIES:
            raise ValueError(
                f"--routing must be one of {', '.join(ROUTING_POLICIES)}, got {self.routing!r}"
            )
        if self.max_imbalance < 0:
            raise ValueError(f"max_imbalance must be >= 0, got {self.max_imbalance}")
        if self.route_pages < 1:
            raise ValueError(f"route_pages must be >= 1, got {self.route_pages}")
        if self.start_retries < 0:
            raise ValueError(f"start_retries must be >= 0, got {self.start_retries}")

    @property
    def max_ongoing_requests(self) -> int:
        """Requests Ray Serve lets a replica hold: its batch plus its queue (the engine
        answers 503 past that), so Ray never queues what the engine would take."""
        return self.engine.max_batch + self.engine.max_waiting
