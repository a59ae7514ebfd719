"""`mlcx bench serve`: load an OpenAI-compatible server with concurrent streaming requests."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from mlcx.bench.measure.serve_load import LoadReport, LoadSpec, prefix_ttft
from mlcx.bench.peers.serving_peers import SERVING_PEERS, serving_peer
from mlcx.bench.peers.serving_setup import ServingSetup
from mlcx.bench.serve_compare import LevelRatio, ratios, run_levels, run_on_peer


def bench_serve_command(
    url: Annotated[str, typer.Option(help="Server base URL.")] = "http://127.0.0.1:8000",
    concurrency: Annotated[
        list[int] | None,
        typer.Option("--concurrency", "-c", help="Concurrent streams (repeat to compare)."),
    ] = None,
    requests: Annotated[
        int | None, typer.Option(help="Requests per level (default: one per stream).")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens per response.")] = 64,
    model: Annotated[str | None, typer.Option(help="Model name (default: the server's).")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="MLCX_API_KEY")] = None,
    prefix_words: Annotated[
        int,
        typer.Option(help="Also time a ~N-word shared system prompt, cold then warm (0: skip)."),
    ] = 0,
    system_prompts: Annotated[
        int,
        typer.Option(
            help="Give each request one of N distinct long system prompts (a fixed random "
            "draw; 0: none), the workload of a prefix-aware router."
        ),
    ] = 0,
    system_words: Annotated[
        int, typer.Option(help="Words in each of those system prompts (~1.3 tokens each).")
    ] = 750,
    warmup: Annotated[bool, typer.Option(help="Send one short request first.")] = True,
    response_format: Annotated[
        Path | None,
        typer.Option(
            help="JSON file with an OpenAI response_format: each level then runs without it and "
            "with it, and the table gives the constrained/plain tok/s ratio."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    against: Annotated[
        str | None,
        typer.Option(
            help=f"Then start this server on the same GGUF and run the same load on it "
            f"({', '.join(SERVING_PEERS)})."
        ),
    ] = None,
    gguf: Annotated[
        str, typer.Option(help="The peer's model: a GGUF path or preset (mlcx's source).")
    ] = "smollm2-135m",
    threads: Annotated[
        int | None, typer.Option(help="The peer's threads (default: every core).")
    ] = None,
    max_batch: Annotated[
        int | None,
        typer.Option(help="The peer's sequences decoded together (default: the largest -c)."),
    ] = None,
    ctx_per_seq: Annotated[int, typer.Option(help="The peer's context per sequence.")] = 2048,
    build_peer: Annotated[
        bool,
        typer.Option(help="Build the peer when it is missing (scripts/build-llamacpp-cpu.sh)."),
    ] = False,
) -> None:
    """Send concurrent streaming chat requests; report TTFT, inter-token latency, tok/s."""
    formats = [None] if response_format is None else [None, _read_format(response_format)]
    levels = concurrency or [1]
    base = LoadSpec(
        url=url,
        max_tokens=max_tokens,
        model=model,
        api_key=api_key,
        num_requests=requests,
        system_prompts=system_prompts,
        system_words=system_words,
    )
    say = _say(as_json)
    peer = None
    if against:
        setup = ServingSetup(
            _peer_gguf(gguf),
            threads or os.cpu_count() or 1,
            max_batch or max(levels),
            ctx_per_seq,
            build_peer,
            say,
        )
        peer = serving_peer(against, setup)
    on_report = _print_json("mlcx") if as_json else None
    reports = run_levels(base, levels, formats, warmup, on_report)
    if not as_json:
        Console(width=_WIDTH).print(_table(reports))
    if peer is not None:
        say(f"starting {peer.command}")
        theirs = run_on_peer(
            peer, base, levels, warmup, _print_json(peer.name) if as_json else None
        )
        _print_comparison(peer.name, theirs, ratios(reports, theirs), as_json)
    if prefix_words:
        cold, warm = asyncio.run(prefix_ttft(base, prefix_words))
        result = {
            "prompt_tokens": cold.prompt_tokens,
            "ttft_cold_s": cold.ttft_s,
            "ttft_warm_s": warm.ttft_s,
            "errors": [r.error for r in (cold, warm) if r.error],
        }
        print(json.dumps(result) if as_json else _prefix_line(result))


# Wide enough for every column unabridged; rich's 80 when piped would cut "json_schema".
_WIDTH = 110


def _say(as_json: bool):
    return (lambda line: None) if as_json else (lambda line: Console(width=_WIDTH).print(line))


def _peer_gguf(model: str) -> Path:
    from mlcx.frontends.source import resolve_path

    return resolve_path(model)


def _print_json(server: str):
    return lambda report: print(json.dumps({"server": server, **report.to_dict()}))


def _print_comparison(name: str, theirs: list[LoadReport], rows: list[LevelRatio], as_json: bool):
    if as_json:
        for row in rows:
            print(json.dumps({"ratio": f"mlcx/{name}", **asdict(row)}))
        return
    console = Console(width=_WIDTH)
    console.print(_table(theirs, f"{name} (same load, same GGUF)"))
    table = Table("streams", "tok/s", "TTFT p50", title=f"mlcx over {name}")
    for row in rows:
        table.add_row(str(row.concurrency), f"{row.tok_s:.2f}x", f"{row.ttft_p50:.2f}x")
    console.print(table)


def _read_format(path: Path) -> dict:
    try:
        fmt = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise typer.BadParameter(
            f"cannot read {path}: {e}", param_hint="--response-format"
        ) from None
    if not isinstance(fmt, dict) or "type" not in fmt:
        raise typer.BadParameter(
            f'{path} must hold an OpenAI response_format object, e.g. {{"type": "json_object"}}',
            param_hint="--response-format",
        )
    return fmt


def _table(reports: list[LoadReport], server: str = "mlcx") -> Table:
    table = Table(
        "streams",
        "format",
        "ok/fail",
        "tok/s",
        "ratio",
        "req/s",
        "TTFT p50/p95 s",
        "ITL p50/p95 ms",
        title=f"{server}: bench serve (ratio: tok/s over the first row; "
        "a constrained row: over the plain row of its level)",
    )
    for r in reports:
        table.add_row(
            str(r.concurrency),
            r.response_format,
            f"{r.requests}/{r.failed}",
            f"{r.output_tok_s:.2f}",
            _ratio(r, _reference(r, reports)),
            f"{r.requests_per_s:.3f}",
            f"{r.ttft_p50_s:.2f}/{r.ttft_p95_s:.2f}",
            f"{r.itl_p50_s * 1e3:.0f}/{r.itl_p95_s * 1e3:.0f}",
        )
    return table


def _reference(report: LoadReport, reports: list[LoadReport]) -> LoadReport:
    if report.response_format == "none":
        return reports[0]
    return next(
        r for r in reports if r.concurrency == report.concurrency and r.response_format == "none"
    )


def _ratio(report: LoadReport, reference: LoadReport) -> str:
    return f"{report.output_tok_s / reference.output_tok_s:.2f}" if reference.output_tok_s else "-"


def _prefix_line(result: dict) -> str:
    return (
        f"shared system prompt of {result['prompt_tokens']} prompt tokens: TTFT cold "
        f"{result['ttft_cold_s']:.2f} s, warm {result['ttft_warm_s']:.2f} s"
        + (f" (errors: {result['errors']})" if result["errors"] else "")
    )


def register(bench: typer.Typer) -> None:
    """Adds `serve` to the `mlcx bench` group."""
    bench.command("serve")(bench_serve_command)
