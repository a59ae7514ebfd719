"""`mlcx web ARTIFACT [--port]` (the browser demo) and `mlcx bench web ARTIFACT`
(decode tok/s natively through wgpu-native and in headless Chromium, one run)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

ArtifactArg = Annotated[
    Path, typer.Argument(help="Artifact compiled with --target webgpu (mlcx compile).")
]


def web_command(
    artifact: ArtifactArg,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8000,
) -> None:
    """Serve the in-browser chat demo and the artifact on 127.0.0.1."""
    from mlcx.web.server import make_server, url_of

    server = make_server(artifact, port)
    typer.echo(f"mlcx web: serving {artifact} at {url_of(server)} (Ctrl-C stops)", err=False)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def bench_web_command(
    artifact: ArtifactArg,
    tokens: Annotated[int, typer.Option(help="Decode steps to time.")] = 16,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Decode tok/s of a webgpu artifact: native (wgpu-native) vs browser (headless Chromium)."""
    from mlcx.web.bench import bench_web

    if tokens < 1:
        raise ValueError(f"--tokens must be at least 1, not {tokens}")
    result = bench_web(artifact, tokens)
    if as_json:
        typer.echo(json.dumps({**asdict(result), "ratio": result.ratio}))
        return
    for speed in (result.native, result.browser):
        typer.echo(f"{speed.where:8s} {speed.tok_per_s:8.3f} tok/s  ({speed.adapter})")
    typer.echo(f"browser/native {result.ratio:.3f}")


def register(app: typer.Typer) -> None:
    app.command("web")(web_command)


def register_bench(bench: typer.Typer) -> None:
    """Adds `web` to the `mlcx bench` group."""
    bench.command("web")(bench_web_command)
