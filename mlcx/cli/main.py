"""The `mlcx` command. Subcommands live one per module (listed in mlcx.cli.commands, imported
when they run) and only parse and call the library."""

from __future__ import annotations

import logging
import os
import sys

import typer
from rich.console import Console
from rich.markup import escape

from mlcx.cli.commands import LazyCommands
from mlcx.errors import MlcxError

app = typer.Typer(
    name="mlcx",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyCommands,
)


@app.callback()
def _root() -> None:
    """Compile LLMs with Apache TVM and run them: CPU, CUDA, Metal, Vulkan, WebGPU, mobile."""


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
        message = f"[bold red]error:[/] {escape(str(err))}"
        Console(stderr=True).print(message, highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
