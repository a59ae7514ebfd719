"""`mlcx bench serve` against a live server."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import typer
from typer.testing import CliRunner

from mlcx.bench.measure.serve_load import (
    LoadSpec,
    distinct_system_prompts,
    prefix_ttft,
    run_load,
    system_prompt_per_request,
)
from mlcx.cli import bench_serve_cmd


def test_load_report(served):
    report = asyncio.run(run_load(LoadSpec(url=served.url, concurrency=4, max_tokens=8)))
    assert (report.requests, report.failed) == (4, 0)
    assert report.output_tokens == 4 * 8
    assert report.output_tok_s > 0 and report.requests_per_s > 0
    assert 0 < report.ttft_p50_s <= report.ttft_p95_s
    assert 0 <= report.itl_p50_s <= report.itl_p95_s


def test_prefix_ttft_reports_cold_and_warm(served):
    cold, warm = asyncio.run(prefix_ttft(LoadSpec(url=served.url, max_tokens=2), words=20))
    assert cold.error is None and warm.error is None
    assert cold.prompt_tokens > 20 and warm.prompt_tokens > 20


def test_cli_registers_under_a_bench_group(served):
    args = ["serve", "--url", served.url, "-c", "1", "-c", "2", "--max-tokens", "4", "--json"]
    result = CliRunner().invoke(_bench_app(), args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line["concurrency"] for line in lines] == [1, 2]
    assert all(line["failed"] == 0 for line in lines)


def _bench_app() -> typer.Typer:
    bench = typer.Typer()
    bench.callback()(lambda: None)
    bench_serve_cmd.register(bench)
    return bench


def test_a_response_format_runs_each_level_plain_then_constrained(served, tmp_path):
    schema = {"type": "object", "properties": {"story": {"type": "string", "minLength": 200}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "story", "schema": schema}}
    path = tmp_path / "format.json"
    path.write_text(json.dumps(fmt))
    args = ["serve", "--url", served.url, "-c", "1", "-c", "2", "--max-tokens", "4"]
    result = CliRunner().invoke(_bench_app(), [*args, "--response-format", str(path), "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [(line["concurrency"], line["response_format"]) for line in lines] == [
        (1, "none"),
        (1, "json_schema"),
        (2, "none"),
        (2, "json_schema"),
    ]
    assert all(line["failed"] == 0 and line["output_tokens"] > 0 for line in lines)


def test_a_response_format_that_is_not_one_is_refused(served, tmp_path):
    path = tmp_path / "format.json"
    path.write_text('["json_object"]')
    args = ["serve", "--url", served.url, "--response-format", str(path)]
    result = CliRunner().invoke(_bench_app(), args)
    assert result.exit_code == 2
    assert "--response-format" in result.output and "response_format object" in result.output


def test_the_response_format_is_sent_with_each_constrained_request(served, tmp_path):
    """A schema the server refuses fails exactly the constrained rows: the format reached it."""
    fmt = {"type": "json_schema", "json_schema": {"name": "bad", "schema": {"type": "strin"}}}
    path = tmp_path / "format.json"
    path.write_text(json.dumps(fmt))
    args = ["serve", "--url", served.url, "-c", "2", "--max-tokens", "2", "--no-warmup"]
    result = CliRunner().invoke(_bench_app(), [*args, "--response-format", str(path), "--json"])
    assert result.exit_code == 0, result.output
    plain, constrained = (json.loads(line) for line in result.output.splitlines())
    assert plain["failed"] == 0 and constrained["failed"] == 2
    assert all("HTTP 400" in error and "strin" in error for error in constrained["errors"])


def test_distinct_system_prompts_workload(served):
    spec = LoadSpec(url=served.url, concurrency=2, num_requests=4, max_tokens=2, system_prompts=2)
    prompts = distinct_system_prompts(replace(spec, system_words=30))
    assert len(set(prompts)) == 2 and prompts == distinct_system_prompts(
        replace(spec, system_words=30)
    )
    assert all(25 <= len(p.split()) <= 31 for p in prompts)
    drawn = system_prompt_per_request(replace(spec, system_words=30, num_requests=40))
    assert len(drawn) == 40 and set(drawn) == set(prompts)
    report = asyncio.run(run_load(replace(spec, system_words=30)))
    assert (report.requests, report.failed) == (4, 0)
