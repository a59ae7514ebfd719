"""`mlcx package CONFIG.json -o DIST`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mlcx.package.build import build_package
from mlcx.package.config import PackageConfig


def package_command(
    config: Annotated[
        Path, typer.Argument(help="Package config JSON (device, models); see docs/packaging.md.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Package directory.")] = Path(
        "dist"
    ),
) -> None:
    """Compile models for an iOS or Android app: dist/lib (libraries) + dist/bundle."""
    package = PackageConfig.read(config)
    app_config = build_package(package, output, typer.echo)
    typer.echo(f"packaged {len(package.models)} models for {package.device} -> {app_config}")


def register(app: typer.Typer) -> None:
    app.command("package")(package_command)
