"""Prometheus metrics, in a registry of their own per app (several apps may share a process).

Engine gauges and counters are read from the snapshot the engine worker takes after each
step, at scrape time; latency histograms are observed as deltas reach the request handlers,
so they include the time a client really waits (queueing and event-loop hand-off).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mlcx.runtime.engine import EngineStats
from mlcx.runtime.outputs import Delta

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class EngineCollector(Collector):
    def __init__(self, stats: Callable[[], EngineStats | None]):
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self._stats()
        if stats is None:  # still loading
            return
        hit_ratio = stats.prefix_hit_tokens / max(stats.prefix_query_tokens, 1)
        gauges = {
            "requests_running": ("Sequences in the running batch.", stats.running),
            "requests_waiting": ("Sequences queued or preempted.", stats.waiting),
            "kv_cache_usage_ratio": (
                "KV blocks held by live sequences over all blocks (unreferenced cached "
                "blocks count as free).",
                stats.kv_usage,
            ),
            "prefix_cache_hit_ratio": (
                "Prompt tokens found in the prefix cache over prompt tokens looked up.",
                hit_ratio,
            ),
        }
        for name, (doc, value) in gauges.items():
            yield GaugeMetricFamily(f"mlcx_{name}", doc, value=value)
        counters = {
            "prompt_tokens": ("Prompt tokens of requests that started.", stats.prompt_tokens),
            "generation_tokens": ("Generated tokens.", stats.generated_tokens),
            "prefix_cache_hit_tokens": (
                "Prompt tokens served from the prefix cache.",
                stats.prefix_hit_tokens,
            ),
            "prefix_cache_query_tokens": (
                "Prompt tokens looked up in the prefix cache.",
                stats.prefix_query_tokens,
            ),
            "preemptions": ("Sequences preempted for lack of KV blocks.", stats.preemptions),
            "spec_proposed_tokens": (
                "Drafted tokens verified by speculative decoding.",
                stats.spec_proposed_tokens,
            ),
            "spec_accepted_tokens": (
                "Drafted tokens kept by speculative decoding.",
                stats.spec_accepted_tokens,
            ),
            "spec_off_steps": (
                "Steps without drafts because more sequences ran than speculation pays for.",
                stats.spec_off_steps,
            ),
        }
        for name, (doc, value) in counters.items():
            yield CounterMetricFamily(f"mlcx_{name}", doc, value=value)


class ServerMetrics:
    def __init__(self, stats: Callable[[], EngineStats | None]):
        self.registry = CollectorRegistry()
        self.registry.register(EngineCollector(stats))
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

    def render(self) -> bytes:
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
