"""`mlcx bench serve --against`: the llama-server command, its start and stop, and the
comparison run against a second real server standing in for the peer."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlcx.bench.measure.serve_load import LoadSpec, run_load
from mlcx.bench.peers import llama_server, serving_peers
from mlcx.bench.peers.llama_server import (
    LlamaServer,
    ensure_llama_server,
    server_argv,
    wait_healthy,
)
from mlcx.bench.peers.serving_setup import ServingSetup
from mlcx.errors import MlcxError, ToolchainError
from tests.server.test_bench_serve import _bench_app
from tests.support.default_model import default_gguf


def _gguf(tmp_path: Path) -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_the_server_command_uses_the_same_gguf_threads_and_slots(tmp_path):
    setup = ServingSetup(_gguf(tmp_path), threads=2, max_batch=16, ctx_per_seq=1024)
    argv = server_argv(Path("/bin/llama-server"), setup, 4242)
    flags = dict(zip(argv[1::2], argv[2::2], strict=True))
    assert flags == {
        "-m": str(tmp_path / "m.gguf"),
        "-t": "2",
        "-tb": "2",
        "-np": "16",
        "-c": str(16 * 1024),  # llama-server splits its context among the slots
        "--host": "127.0.0.1",
        "--port": "4242",
    }


@pytest.mark.parametrize(
    "field, value, message",
    [("threads", 0, "threads must be >= 1"), ("max_batch", 0, "max_batch must be >= 1")],
)
def test_setup_refuses_bad_values(tmp_path, field, value, message):
    kw = {"threads": 2, "max_batch": 4, field: value}
    with pytest.raises(ValueError, match=message):
        ServingSetup(_gguf(tmp_path), **kw)


def test_setup_refuses_a_model_that_is_no_gguf(tmp_path):
    with pytest.raises(ValueError, match="needs a GGUF file"):
        ServingSetup(tmp_path, threads=2, max_batch=4)


def test_an_unknown_peer_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="llama-server"):
        serving_peers.serving_peer("vllm", ServingSetup(_gguf(tmp_path), 1, 1))


def test_a_missing_binary_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MLCX_CACHE", str(tmp_path))
    with pytest.raises(ToolchainError) as err:
        ensure_llama_server(build=False, say=print)
    message = str(err.value)
    assert "peer_builds/build-llamacpp-cpu.sh" in message and "--build-peer" in message


def test_a_server_that_exits_before_it_is_healthy_is_reported():
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(MlcxError, match="exited with 3"):
        wait_healthy("http://127.0.0.1:9", process, timeout_s=30)


class _SecondServer:
    """A peer that is another live server (here: mlcx's own), to run the comparison for real."""

    name = "second"
    command = "already running"

    def __init__(self, url: str):
        self.url = url
        self.started = 0

    @contextmanager
    def running(self):
        self.started += 1
        yield self.url


def test_against_runs_the_same_levels_on_the_peer_and_gives_ratios(served, monkeypatch, tmp_path):
    peer = _SecondServer(served.url)
    monkeypatch.setitem(serving_peers.SERVING_PEERS, "second", lambda setup: peer)
    args = ["serve", "--url", served.url, "-c", "1", "-c", "2", "--max-tokens", "4", "--json"]
    args += ["--against", "second", "--gguf", str(_gguf(tmp_path))]
    result = CliRunner().invoke(_bench_app(), args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    runs = [(x["server"], x["concurrency"], x["failed"]) for x in lines if "server" in x]
    assert runs == [("mlcx", 1, 0), ("mlcx", 2, 0), ("second", 1, 0), ("second", 2, 0)]
    assert [x["concurrency"] for x in lines if "ratio" in x] == [1, 2]
    assert all(x["tok_s"] > 0 for x in lines if "ratio" in x)
    assert peer.started == 1


@pytest.mark.slow
@pytest.mark.skipif(
    not os.access(llama_server.BUILD.bin_dir() / "llama-server", os.X_OK),
    reason="llama-server is not built (scripts/build-llamacpp-cpu.sh)",
)
def test_llama_server_serves_the_default_gguf_and_stops():
    peer = LlamaServer(ServingSetup(default_gguf(), threads=2, max_batch=2, ctx_per_seq=256))
    with peer.running() as url:
        # two requests per stream: a second request after a streamed answer once failed
        spec = LoadSpec(url=url, concurrency=2, num_requests=4, max_tokens=4)
        report = asyncio.run(run_load(spec))
    assert (report.requests, report.failed) == (4, 0), report.errors
    assert report.output_tokens == 4 * 4  # ignore_eos is honoured: every answer is 4 tokens
    with pytest.raises(Exception):  # noqa: B017 - any connection error: the server is gone
        asyncio.run(run_load(LoadSpec(url=url, concurrency=1, max_tokens=1, timeout_s=2)))
