"""Prometheus metrics, in a registry of their own per app (several apps may share a process).

Engine gauges and counters are read at scrape time from the snapshot each engine's worker
takes after each step (one engine, or every replica); latency histograms are observed as
deltas reach the request handlers, so they include the time a client really waits (queueing
and event-loop hand-off).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.stats import EngineStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class EngineCollector(Collector):
    """Engine gauges and counters from `latest`: one sample per engine, labelled with its
    replica when there are several (`mlcx serve --replicas`), unlabelled otherwise."""

    def __init__(self) -> None:
        self.latest: dict[str, EngineStats] = {}

    def collect(self) -> Iterator[Metric]:
        latest = self.latest
        labels = ["replica"] if any(latest) else []
        for name, (kind, doc, value_of) in _ENGINE_METRICS.items():
            family = kind(f"mlcx_{name}", doc, labels=labels)
            samples = [(r, value_of(s)) for r, s in sorted(latest.items())]
            for replica, value in samples:
                if value is not None:  # a value a runner does not know (step_pool_bytes)
                    family.add_metric([replica] if labels else [], value)
            yield family


def _hit_ratio(stats: EngineStats) -> float:
    return stats.prefix_hit_tokens / max(stats.prefix_query_tokens, 1)


# The names a Gateway API Inference Extension endpoint picker reads are documented in
# docs/replicas.md (TotalQueuedRequests = requests_waiting, TotalRunningRequests =
# requests_running, KVCacheUtilization = kv_cache_usage_ratio).
_G, _C = GaugeMetricFamily, CounterMetricFamily
_ENGINE_METRICS: dict[str, tuple[type, str, Callable[[EngineStats], float]]] = {
    "requests_running": (_G, "Sequences in the running batch.", lambda s: s.running),
    "requests_waiting": (_G, "Sequences queued or preempted.", lambda s: s.waiting),
    "kv_cache_usage_ratio": (
        _G,
        "KV blocks held by live sequences over all blocks (unreferenced cached blocks count "
        "as free).",
        lambda s: s.kv_usage,
    ),
    "prefix_cache_hit_ratio": (
        _G,
        "Prompt tokens found in the prefix cache over prompt tokens looked up.",
        _hit_ratio,
    ),
    "prompt_tokens": (_C, "Prompt tokens of requests that started.", lambda s: s.prompt_tokens),
    "generation_tokens": (_C, "Generated tokens.", lambda s: s.generated_tokens),
    "prefix_cache_hit_tokens": (
        _C,
        "Prompt tokens served from the prefix cache.",
        lambda s: s.prefix_hit_tokens,
    ),
    "prefix_cache_query_tokens": (
        _C,
        "Prompt tokens looked up in the prefix cache.",
        lambda s: s.prefix_query_tokens,
    ),
    "preemptions": (_C, "Sequences preempted for lack of KV blocks.", lambda s: s.preemptions),
    "spec_proposed_tokens": (
        _C,
        "Drafted tokens verified by speculative decoding.",
        lambda s: s.spec_proposed_tokens,
    ),
    "spec_accepted_tokens": (
        _C,
        "Drafted tokens kept by speculative decoding.",
        lambda s: s.spec_accepted_tokens,
    ),
    "spec_off_steps": (
        _C,
        "Steps without drafts because more sequences ran than speculation pays for.",
        lambda s: s.spec_off_steps,
    ),
    "weights_bytes": (_G, "Device memory of the model's weights.", lambda s: s.weights_bytes),
    "kv_pool_bytes": (
        _G,
        "Device memory of the KV pages, allocated whole at start (touched as it fills).",
        lambda s: s.kv_pool_bytes,
    ),
    "step_pool_bytes": (
        _G,
        "Step buffers the wgpu runner pools (size classes, reused across steps).",
        lambda s: s.step_pool_bytes,
    ),
    # hybrid models only (a state per sequence beside the KV pages): absent for the others
    "state_pool_bytes": (
        _G,
        "Device memory of the state slots (running sequences' and checkpoints').",
        lambda s: s.state_pool_bytes,
    ),
    "state_slots_in_use": (
        _G,
        "State slots held by running sequences.",
        lambda s: s.state_slots_in_use,
    ),
    "state_checkpoints": (
        _G,
        "Saved states held for prefix reuse.",
        lambda s: s.state_checkpoints,
    ),
    "state_checkpoint_hits": (
        _C,
        "Sequences that resumed from a saved state (a prefix cache hit with its state).",
        lambda s: s.state_checkpoint_hits,
    ),
    "prefix_cache_hits_without_state": (
        _C,
        "Prefix cache hits shortened or skipped because no state was saved where the cached "
        "pages end.",
        lambda s: s.prefix_hits_without_state,
    ),
    "prefix_cache_tokens_without_state": (
        _C,
        "Cached prompt tokens recomputed because no state was saved where the cached pages end.",
        lambda s: s.prefix_tokens_without_state,
    ),
}


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._engines = EngineCollector()
        self.registry.register(self._engines)
        # process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds, ...
        ProcessCollector(registry=self.registry)
        self.ttft = Histogram(
            "mlcx_time_to_first_token_seconds",
            "From a request's arrival to its first generated token.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.itl = Histogram(
            "mlcx_inter_token_latency_seconds",
            "Between consecutive tokens of one choice.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.e2e = Histogram(
            "mlcx_request_latency_seconds",
            "From a request's arrival to its last token.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )

    def render(self, engines: dict[str, EngineStats]) -> bytes:
        """The exposition, with the engine metrics of `engines` (replica label -> stats)."""
        self._engines.latest = engines
        return generate_latest(self.registry)

    def timer(self) -> RequestTimer:
        return RequestTimer(self)


class RequestTimer:
    """Latencies of one request, fed with its deltas as the handler receives them."""

    def __init__(self, metrics: ServerMetrics):
        self._metrics = metrics
        self._start = time.perf_counter()
        self._last: dict[tuple[str, int], float] = {}  # choice -> time of its last token

    def observe(self, delta: Delta) -> None:
        if not delta.token_ids:
            return
        now = time.perf_counter()
        choice = (delta.request_id, delta.index)
        if not self._last:
            self._metrics.ttft.observe(now - self._start)
        elif choice in self._last:
            self._metrics.itl.observe(now - self._last[choice])
        self._last[choice] = now

    def finish(self) -> None:
        if self._last:
            self._metrics.e2e.observe(max(self._last.values()) - self._start)
