"""`mlcx web ARTIFACT [--port]` (the browser demo) and `mlcx bench web ARTIFACT` (prefill and
decode tok/s in headless Chromium and natively through wgpu-native on the same adapter)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from mlcx.web.dawn import SLOW_ON_SWIFTSHADER, DawnToggles

ArtifactArg = Annotated[
    Path, typer.Argument(help="Artifact compiled with --target webgpu (mlcx compile).")
]


def web_command(
    artifacts: Annotated[
        list[Path],
        typer.Argument(
            help="Artifacts compiled with --target webgpu (mlcx compile): the demo runs the "
            "first; pages load any by its model id (prebuiltAppConfig)."
        ),
    ],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8000,
) -> None:
    """Serve the in-browser chat demo and the artifacts on 127.0.0.1."""
    from mlcx.web.server import make_server, url_of

    server = make_server(artifacts, port)
    shown = ", ".join(map(str, artifacts))
    typer.echo(f"mlcx web: serving {shown} at {url_of(server)} (Ctrl-C stops)", err=False)
    for model in server.models:
        typer.echo(f"  model id {model.model_id!r}: {model.url}", err=False)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def bench_web_command(
    artifact: ArtifactArg,
    prompt: Annotated[int, typer.Option(help="Prompt tokens (fixed ids).")] = 64,
    tokens: Annotated[int, typer.Option(help="Decode steps to time.")] = 16,
    reps: Annotated[int, typer.Option(help="Runs per side, interleaved; speeds are medians.")] = 3,
    demo: Annotated[
        bool, typer.Option(help="Also time the chat answer to 'What is the capital of France?'.")
    ] = True,
    dawn_enable: Annotated[
        str,
        typer.Option(
            help="Comma-separated Dawn toggles to enable in Chromium (e.g. "
            "disable_robustness,disable_workgroup_init), to measure what they cost."
        ),
    ] = "",
    dawn_disable: Annotated[
        str,
        typer.Option(
            help="Comma-separated Dawn toggles to disable in Chromium ('' for Chromium's defaults)."
        ),
    ] = ",".join(SLOW_ON_SWIFTSHADER),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Prefill and decode tok/s of a webgpu artifact in headless Chromium and natively
    (wgpu-native), both on Chromium's SwiftShader; browser/native ratios."""
    from mlcx.web.bench import BenchSpec, bench_web, report
    from mlcx.web.browser import require_playwright

    require_playwright()
    dawn = DawnToggles.parse(dawn_enable, dawn_disable)
    result = bench_web(artifact, BenchSpec(prompt, tokens, reps, demo, dawn))
    if as_json:
        ratios = {"prefill_ratio": result.prefill_ratio, "decode_ratio": result.decode_ratio}
        typer.echo(json.dumps({**asdict(result), **ratios}))
        return
    for line in report(result):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("web")(web_command)


def register_bench(bench: typer.Typer) -> None:
    """Adds `web` to the `mlcx bench` group."""
    bench.command("web")(bench_web_command)
