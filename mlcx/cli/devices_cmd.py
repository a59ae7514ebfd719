"""`mlcx devices [--json]`."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from mlcx.runtime.backends.devices import DeviceReport, list_devices


def _table(report: DeviceReport) -> Table:
    table = Table("kind", "device", "details", "runs targets")
    for dev in report.devices:
        details = "\n".join(f"{k}: {v}" for k, v in dev.details.items())
        name = dev.name + (" [software]" if dev.software else "")
        table.add_row(dev.kind, name, details, ", ".join(dev.targets) or "-")
    return table


def devices_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List this machine's CPU, CUDA GPUs and wgpu adapters, and the targets each runs."""
    report = list_devices()
    if as_json:
        typer.echo(json.dumps(asdict(report), indent=2))
        return
    console = Console()
    console.print(_table(report))
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("devices")(devices_command)
