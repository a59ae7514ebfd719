"""The `mlcx` command. Subcommands live one per module and only parse and call the library."""

from __future__ import annotations

import logging
import os
import sys

import typer
from rich.console import Console

from mlcx.cli import (
    bench_cmd,
    chat_cmd,
    compile_cmd,
    devices_cmd,
    generate_cmd,
    package_cmd,
    serve_cmd,
    tune_cmd,
    web_cmd,
)
from mlcx.errors import MlcxError

app = typer.Typer(
    name="mlcx",
    help="Compile LLMs with Apache TVM and run them: CPU, CUDA, Metal, Vulkan, WebGPU, mobile.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module registers its commands; add new command modules here.
COMMAND_MODULES = [
    compile_cmd,
    generate_cmd,
    chat_cmd,
    serve_cmd,
    package_cmd,
    devices_cmd,
    web_cmd,
    bench_cmd,
    tune_cmd,
]
for module in COMMAND_MODULES:
    module.register(app)


def main() -> None:
    """Console entry point: user errors print as one line, without a traceback."""
    logging.basicConfig(
        level=os.environ.get("MLCX_LOG", "WARNING").upper(),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        app()
    except (MlcxError, ValueError) as err:
        if os.environ.get("MLCX_DEBUG"):
            raise
        Console(stderr=True).print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
