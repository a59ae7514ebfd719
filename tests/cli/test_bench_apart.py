"""`mlcx bench --against` on the CPU runs the engines interleaved rep by rep when their weights
fit in memory together, and one after the other, mlcx freed before the peer loads, when they do
not (mlcx.bench.measure.residency). The peer here is a recorder in llama.cpp's registry slot:
what is under test is the bench's order of loads, runs and frees, on the real mlcx engine."""

from __future__ import annotations

import pytest

from mlcx.bench.measure import residency
from mlcx.bench.measure.mlcx_engine import MlcxEngine
from mlcx.bench.peers.peers import PEERS
from mlcx.bench.run import BenchRequest, run_bench
from mlcx.bench.workloads.workload import RunTiming
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=4)  # tests/cli/test_bench.py's


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(SPEC, "q4f32")


@pytest.fixture
def events(monkeypatch):
    """The order of engine events, with llama.cpp's slot taken by a recorder."""
    log: list[str] = []

    class Recorder:
        name, device, command, notes = "llama.cpp", "cpu", None, ()

        def __init__(self, setup):
            log.append("peer loaded")

        def warm_up(self, ids, workload):
            pass

        def run(self, ids, workload):
            log.append("peer run")
            return RunTiming(0.01, 0.01)

    run, close = MlcxEngine.run, MlcxEngine.close

    def record_run(self, ids, workload):
        log.append("mlcx run")
        return run(self, ids, workload)

    def record_close(self):
        log.append("mlcx freed")
        close(self)

    monkeypatch.setitem(PEERS, "llama.cpp", Recorder)
    monkeypatch.setattr(MlcxEngine, "run", record_run)
    monkeypatch.setattr(MlcxEngine, "close", record_close)
    return log


def _bench(artifact, gguf):
    request = BenchRequest(
        str(artifact), prompt_tokens=8, decode_tokens=2, reps=2, threads=1,
        against=("llama.cpp",), gguf=gguf,
    )  # fmt: skip
    return run_bench(request, say=lambda _: None)


def test_engines_that_fit_together_run_interleaved(artifact, events, tmp_path):
    gguf = tmp_path / "peer.gguf"
    gguf.write_bytes(b"\0" * 1024)
    report = _bench(artifact, gguf)
    # the mlcx warm-up, then rep by rep: mlcx, the peer
    assert events == ["mlcx run", "peer loaded", *["mlcx run", "peer run"] * 2]
    assert set(report.speeds) == {"mlcx", "llama.cpp"}
    assert not any("one after the other" in note for note in report.notes)


def test_engines_too_big_together_run_one_after_the_other(artifact, events, tmp_path, monkeypatch):
    gguf = tmp_path / "peer.gguf"
    gguf.write_bytes(b"\0" * 1024)
    params = residency.tree_bytes(artifact / "params")
    # room for either model, not for both
    monkeypatch.setattr(residency, "available_bytes", lambda: int((params + 1024) * 1.1))
    report = _bench(artifact, gguf)
    assert events == [
        *["mlcx run"] * 3,  # the warm-up and both reps
        "mlcx freed",
        "peer loaded",
        *["peer run"] * 2,
    ]
    assert set(report.speeds) == {"mlcx", "llama.cpp"}
    assert report.devices == {"mlcx": "cpu", "llama.cpp": "cpu"}
    [note] = [n for n in report.notes if "one after the other" in n]
    assert "do not fit together" in note
