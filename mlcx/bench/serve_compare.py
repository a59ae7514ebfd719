"""Runs the same load levels against mlcx's server and then against a serving peer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from mlcx.bench.measure.serve_load import LoadReport, LoadSpec, run_load, warm_up


def run_levels(
    base: LoadSpec, levels: list[int], formats: list[dict | None], warmup: bool, on_report=None
) -> list[LoadReport]:
    """One report per (level, format), in that order; `on_report` sees each as it is done."""
    if warmup:
        for fmt in formats:
            asyncio.run(warm_up(replace(base, response_format=fmt)))
    reports = []
    for level in levels:
        for fmt in formats:
            reports.append(
                asyncio.run(run_load(replace(base, concurrency=level, response_format=fmt)))
            )
            if on_report:
                on_report(reports[-1])
    return reports


def run_on_peer(peer, base: LoadSpec, levels: list[int], warmup: bool, on_report=None):
    """The same levels against a started peer (its own model name, no API key); stopped after."""
    with peer.running() as url:
        spec = replace(base, url=url, model=None, api_key=None)
        return run_levels(spec, levels, [None], warmup, on_report)


@dataclass(frozen=True)
class LevelRatio:
    concurrency: int
    tok_s: float  # mlcx's output tok/s over the peer's
    ttft_p50: float  # mlcx's median time to first token over the peer's


def ratios(ours: list[LoadReport], theirs: list[LoadReport]) -> list[LevelRatio]:
    """Per level, mlcx over the peer, on plain (unconstrained) reports."""
    peer = {r.concurrency: r for r in theirs if r.response_format == "none"}
    out = []
    for r in ours:
        p = peer.get(r.concurrency)
        if r.response_format != "none" or p is None:
            continue
        tok = r.output_tok_s / p.output_tok_s if p.output_tok_s else float("nan")
        ttft = r.ttft_p50_s / p.ttft_p50_s if p.ttft_p50_s else float("nan")
        out.append(LevelRatio(r.concurrency, tok, ttft))
    return out
