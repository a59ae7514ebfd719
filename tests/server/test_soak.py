"""`mlcx bench soak` against a real server (tiny model, seconds instead of minutes): a mixed load
with hang-ups ends without errors, with RSS read from /metrics, and leaves nothing behind:
no request, sequence, KV block or queued add once the server is idle (issue 32)."""

from __future__ import annotations

import asyncio

from mlcx.bench.soak import SoakSpec, run_soak, sample_times
from tests.server.conftest import serving
from tests.support.cli import run_mlcx


def test_a_mixed_soak_leaves_nothing_behind(artifact):
    with serving(artifact) as s:
        spec = SoakSpec(
            s.url,
            minutes=0.1,
            warmup_minutes=0.02,
            clients=6,
            sample_every_s=2,
            max_prompt_words=20,  # the tiny tokenizer: ~5 tokens a word, 256 in all
        )
        report = asyncio.run(run_soak(spec, say=lambda _line: None))
        engine = s.engine
        assert report.last_error is None and report.samples[-1].errors == 0
        assert report.samples[-1].requests >= 20 and report.hang_ups >= 1
        assert all(sample.rss_bytes > 0 for sample in report.samples)
        assert len(report.samples) == 4  # 0, 2, 4 seconds and the end (6 s)
        idle = report.idle
        assert (idle.running, idle.waiting, idle.kv_usage) == (0, 0, 0)
        assert engine.request_ids() == [] and len(engine.kv) == 0
        assert not engine.has_work() and engine.kv.pool.num_used == 0


def test_samples_start_after_the_warm_up_and_end_with_the_load():
    spec = SoakSpec("http://x", minutes=2.5, warmup_minutes=1, sample_every_s=60)
    assert sample_times(spec, 100.0) == [160.0, 220.0, 280.0, 310.0]


def test_the_command_refuses_a_bad_url():
    result = run_mlcx("bench", "soak", "--url", "localhost:8000", "--minutes", "1")
    assert result.returncode == 1 and "url must start with http://" in result.stderr
