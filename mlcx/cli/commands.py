"""The registry of `mlcx` commands: name -> the module that registers it, and its one-line help.

The CLI imports a command's module only when that command runs (or prints its own help), so a
command never pays for, or fails on, another command's imports. `mlcx --help` lists commands from
this table alone; tests/cli/test_commands.py holds each line equal to the command's own help.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import click
import typer


@dataclass(frozen=True)
class CommandEntry:
    module: str  # registers the command with `register(app: typer.Typer)`
    help: str

    def load(self, name: str) -> click.Command:
        app = typer.Typer()
        importlib.import_module(self.module).register(app)
        command = typer.main.get_group(app).commands[name]
        return command


COMMANDS: dict[str, CommandEntry] = {
    "compile": CommandEntry(
        "mlcx.cli.compile_cmd",
        "Compile a model into an artifact directory that the mlcx runtime loads.",
    ),
    "generate": CommandEntry(
        "mlcx.cli.generate_cmd", "Generate a completion for one prompt, streaming it to stdout."
    ),
    "chat": CommandEntry(
        "mlcx.cli.chat_cmd", "Chat with a model; the conversation is kept until /reset."
    ),
    "serve": CommandEntry(
        "mlcx.cli.serve_cmd",
        "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions).",
    ),
    "package": CommandEntry(
        "mlcx.cli.package_cmd",
        "Compile models for an iOS or Android app: dist/lib (libraries) + dist/bundle, and with "
        "--app the WebView app projects that run them.",
    ),
    "devices": CommandEntry(
        "mlcx.cli.devices_cmd",
        "List this machine's CPU, CUDA GPUs and wgpu adapters, and the targets each runs.",
    ),
    "web": CommandEntry(
        "mlcx.cli.web_cmd", "Serve the in-browser chat demo and the artifacts on 127.0.0.1."
    ),
    "bench": CommandEntry(
        "mlcx.cli.bench_cmd",
        "Benchmarks: `run` (default; prefill/decode vs llama.cpp), `serve`, `web`, "
        "`speculative`, `lora`, `profile`, `soak`, `embed`, `image` (time to encode one image).",
    ),
    "tune": CommandEntry(
        "mlcx.cli.tune_cmd",
        "Autotune a model's CPU kernels with MetaSchedule; compile with --tuning-db to use it.",
    ),
}


class LazyCommands(typer.core.TyperGroup):
    """A group whose subcommands come from COMMANDS and are imported on first use."""

    _listing = False  # True while the group prints its own help: commands stay unimported

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if self._listing:
            return click.Command(cmd_name, help=entry.help, short_help=entry.help)
        return entry.load(cmd_name)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
