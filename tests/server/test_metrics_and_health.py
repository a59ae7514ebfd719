"""GET /metrics (Prometheus text) and GET /health (503 while loading)."""

from __future__ import annotations

import math
import threading
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from mlcx.artifact.config import Artifact
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.server import create_app
from tests.server.conftest import serving
from tests.support.live_server import live_server

REQUIRED = {
    "mlcx_requests_running": "gauge",
    "mlcx_requests_waiting": "gauge",
    "mlcx_kv_cache_usage_ratio": "gauge",
    "mlcx_prefix_cache_hit_ratio": "gauge",
    "mlcx_time_to_first_token_seconds": "histogram",
    "mlcx_inter_token_latency_seconds": "histogram",
    "mlcx_prompt_tokens": "counter",
    "mlcx_generation_tokens": "counter",
}


def scrape(url: str) -> dict[str, dict[str, float]]:
    text = httpx.get(f"{url}/metrics").text
    return {
        family.name: {s.name + str(sorted(s.labels.items())): s.value for s in family.samples}
        | {"type": family.type}
        for family in text_string_to_metric_families(text)
    }


def value(metrics, name: str, sample: str | None = None) -> float:
    return metrics[name][f"{sample or name}[]"]


def test_metrics_report_the_process_and_the_engines_memory(artifact):
    with serving(artifact) as s:
        metrics = scrape(s.url)
        with open("/proc/self/statm") as statm:  # the server runs in this test's process
            rss = int(statm.read().split()[1]) * 4096
        resident = value(metrics, "process_resident_memory_bytes")
        assert 0.5 * rss < resident < 2 * rss
        assert value(metrics, "process_open_fds") > 0
        assert value(metrics, "process_cpu_seconds", "process_cpu_seconds_total") > 0
        config = Artifact(artifact).config
        kv = s.engine.num_blocks * config.kv_block_bytes
        assert value(metrics, "mlcx_kv_pool_bytes") == kv
        weights = sum(p.stat().st_size for p in Artifact(artifact).params_dir.glob("*.bin"))
        assert 0.9 * weights <= value(metrics, "mlcx_weights_bytes") <= weights
        assert "mlcx_step_pool_bytes[]" not in metrics["mlcx_step_pool_bytes"]  # TVM's own pool


def test_metrics_report_the_engine_and_latencies(artifact):
    with serving(artifact, step_delay_s=0.005) as s:
        client = s.client()
        client.completions.create(
            model=s.model, prompt="hello", max_tokens=10, extra_body={"ignore_eos": True}
        )
        metrics = scrape(s.url)
        for name, kind in REQUIRED.items():
            assert metrics[name]["type"] == kind, name
        assert value(metrics, "mlcx_generation_tokens", "mlcx_generation_tokens_total") == 10
        prompt = len(s.engine.tokenizer.encode("hello", add_special_tokens=True))
        assert value(metrics, "mlcx_prompt_tokens", "mlcx_prompt_tokens_total") == prompt
        ttft = "mlcx_time_to_first_token_seconds"
        assert value(metrics, ttft, f"{ttft}_count") == 1
        itl = "mlcx_inter_token_latency_seconds"
        assert value(metrics, itl, f"{itl}_count") == 9
        assert value(metrics, itl, f"{itl}_sum") >= 9 * 0.005


def test_kv_usage_counts_only_blocks_held_by_live_requests(artifact):
    with serving(artifact, step_delay_s=0.005) as s:
        stream = s.client().completions.create(
            model=s.model,
            prompt="hello " * 40,
            max_tokens=100,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        next(iter(stream))
        busy = scrape(s.url)
        assert value(busy, "mlcx_requests_running") == 1
        assert value(busy, "mlcx_kv_cache_usage_ratio") > 0
        stream.close()
        s.wait_idle()
        time.sleep(0.05)
        idle = scrape(s.url)
        assert s.engine.kv.pool.num_cached > 0  # full prompt blocks stay cached ...
        assert value(idle, "mlcx_kv_cache_usage_ratio") == 0.0  # ... but count as free
        assert value(idle, "mlcx_requests_running") == 0


def test_kv_usage_of_int8_pages_counts_blocks_sized_by_their_real_bytes(compiled):
    """An int8 cache (head_dim 16: 16 + 4 bytes a row, f32's 64) fits 3.2x f32's blocks in
    the same budget; the pages allocated stay within it, and the usage ratio counts them."""
    f32, int8 = compiled(), compiled(kv_dtype="int8")
    budget = 20 * Artifact(f32).config.kv_block_bytes
    f32_blocks = Engine(f32, EngineConfig(kv_cache_bytes=budget)).num_blocks
    # steps slow enough that the 20 tokens are still decoding when the metrics are read
    with serving(int8, EngineConfig(kv_cache_bytes=budget), step_delay_s=0.1) as s:
        blocks, page = s.engine.num_blocks, s.engine.artifact.config.page_size
        assert (f32_blocks, blocks) == (20, 64)  # 20 * 64 // 20
        pages = s.engine.runner.kv_pages
        assert sum(math.prod(p.shape) for p in pages) <= budget  # int8: one byte each
        prompt = "hello " * 40
        stream = s.client().completions.create(
            model=s.model,
            prompt=prompt,
            max_tokens=20,
            stream=True,
            extra_body={"ignore_eos": True},
        )
        next(iter(stream))
        held = value(scrape(s.url), "mlcx_kv_cache_usage_ratio") * blocks
        tokens = len(s.engine.tokenizer.encode(prompt, add_special_tokens=True))
        assert held == round(held)
        assert -(-tokens // page) <= round(held) <= -(-(tokens + 20) // page)
        stream.close()


def test_health_is_503_while_loading(artifact):
    release = threading.Event()

    def slow_loader() -> Engine:
        release.wait(10)
        return Engine(artifact)

    with live_server(create_app(slow_loader)) as url:
        loading = httpx.get(f"{url}/health")
        assert (loading.status_code, loading.json()) == (503, {"status": "loading"})
        early = httpx.post(
            f"{url}/v1/completions", json={"model": "m", "prompt": "hi", "max_tokens": 1}
        )
        assert early.status_code == 503 and early.json()["error"]["code"] == "model_loading"
        assert httpx.get(f"{url}/metrics").status_code == 200
        release.set()
        deadline = time.monotonic() + 10
        while httpx.get(f"{url}/health").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        model = httpx.get(f"{url}/v1/models").json()["data"][0]["id"]
        ok = httpx.post(
            f"{url}/v1/completions", json={"model": model, "prompt": "hi", "max_tokens": 1}
        )
        assert ok.status_code == 200


def test_health_reports_a_failed_load():
    def broken_loader() -> Engine:
        raise RuntimeError("weights are corrupted")

    with live_server(create_app(broken_loader)) as url:
        deadline = time.monotonic() + 5
        while (health := httpx.get(f"{url}/health")).json()["status"] == "loading":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert health.status_code == 503
        assert health.json() == {"status": "failed", "error": "weights are corrupted"}


class FailingOnce:
    """Raises on the `fail_at`-th forward step, like a lost device would."""

    def __init__(self, runner, fail_at: int):
        self._runner, self._fail_at, self._calls = runner, fail_at, 0

    def __getattr__(self, name: str):
        return getattr(self._runner, name)

    def forward(self, batch):
        self._calls += 1
        if self._calls == self._fail_at:
            raise RuntimeError("device lost")
        return self._runner.forward(batch)


def test_an_engine_failure_fails_requests_but_not_the_server(artifact):
    with serving(artifact) as s:
        s.engine.runner = FailingOnce(s.engine.runner, fail_at=3)
        body = {"model": s.model, "prompt": "hello", "max_tokens": 10, "ignore_eos": True}
        failed = httpx.post(f"{s.url}/v1/completions", json=body)
        assert failed.status_code == 500
        assert failed.json()["error"]["type"] == "server_error"
        assert "device lost" in failed.json()["error"]["message"]
        s.wait_idle()
        assert s.engine.kv.pool.num_used == 0
        assert httpx.post(f"{s.url}/v1/completions", json=body).status_code == 200


def test_metrics_count_speculative_tokens(artifact):
    """Prompt lookup on a prompt whose greedy continuation repeats: the counters are the
    engine's, and the completion equals the one without speculation."""
    from mlcx.runtime.core.config import EngineConfig
    from mlcx.runtime.speculative.config import SpeculativeConfig

    prompt = [5, 6, 7, 8, 9] * 8
    texts = []
    for config in (
        EngineConfig(),
        EngineConfig(speculative=SpeculativeConfig("ngram", num_tokens=4)),
    ):
        with serving(artifact, config) as s:
            out = s.client().completions.create(
                model=s.model,
                prompt=prompt,
                max_tokens=32,
                temperature=0,
                extra_body={"ignore_eos": True},
            )
            texts.append(out.choices[0].text)
            metrics = scrape(s.url)
            stats = s.engine.stats()
    assert texts[0] == texts[1]
    proposed = value(metrics, "mlcx_spec_proposed_tokens", "mlcx_spec_proposed_tokens_total")
    accepted = value(metrics, "mlcx_spec_accepted_tokens", "mlcx_spec_accepted_tokens_total")
    assert (proposed, accepted) == (stats.spec_proposed_tokens, stats.spec_accepted_tokens)
    assert proposed > 0
