"""`mlcx package CONFIG.json -o DIST`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mlcx.package.app_shells import resolve_apps
from mlcx.package.build import build_package
from mlcx.package.config import PackageConfig


def package_command(
    config: Annotated[
        Path, typer.Argument(help="Package config JSON (device, models); see docs/packaging.md.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Package directory.")] = Path(
        "dist"
    ),
    app: Annotated[
        str | None,
        typer.Option(
            "--app",
            help="Also write dist/www (WebGPU runtime) and app projects: ios, android or both.",
        ),
    ] = None,
) -> None:
    """Compile models for an iOS or Android app: dist/lib (libraries) + dist/bundle, and with
    --app the WebView app projects that run them."""
    try:
        apps = resolve_apps(app)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--app") from None
    package = PackageConfig.read(config)
    app_config = build_package(package, output, typer.echo, apps)
    typer.echo(f"packaged {len(package.models)} models for {package.device} -> {app_config}")
    for kind in apps:
        typer.echo(f"{kind} app project: {output / kind} (see its README.md)")


def register(app: typer.Typer) -> None:
    app.command("package")(package_command)
