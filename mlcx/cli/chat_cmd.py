"""`mlcx chat MODEL`: an interactive conversation in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mlcx.cli.engine_options import EngineOptions, with_engine_options
from mlcx.errors import ContextWindowError, ImageError
from mlcx.runtime.api.chat_session import ChatSession
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.text.reasoning import CHOICES, Reasoning, ReplyEvent, ToolCallStart
from mlcx.runtime.vision.decode import read_image_file

HELP = (
    "Type a message. /image FILE sends an image with the next message, /reset starts over, "
    "/exit quits (or Ctrl-D)."
)


def _read(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def chat_command(
    model: Annotated[str, typer.Argument(help="Artifact dir, or a model to compile first.")],
    system: Annotated[str | None, typer.Option(help="System message.")] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens per reply at most.")] = 512,
    temperature: Annotated[float | None, typer.Option(help="0 = greedy.")] = None,
    top_p: Annotated[float | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    reasoning_format: Annotated[
        str,
        typer.Option(
            help=f"Split replies into reasoning (shown dimmed) and content: {', '.join(CHOICES)}."
        ),
    ] = "auto",
    adapter: Annotated[
        str | None,
        typer.Option(help="The --lora adapter to run with (default: the first; none: no adapter)."),
    ] = None,
    *,
    engine: EngineOptions,
) -> None:
    """Chat with a model; the conversation is kept until /reset."""
    llm = LLM(engine.artifact(model), engine.engine_config(), reasoning_format)
    params = llm.default_params(
        max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed
    )
    session = ChatSession(llm, params, system, engine.adapter_request(adapter))
    print(HELP)
    while (line := _read(">>> ")) is not None:
        command = line.strip()
        if command in ("/exit", "/quit"):
            break
        if command == "/reset":
            session.reset()
            print("(conversation cleared)")
        elif command.startswith("/image "):
            _attach(session, command.removeprefix("/image ").strip())
        elif command:
            _reply(session, line)


def _attach(session: ChatSession, path: str) -> None:
    try:
        session.attach(read_image_file(Path(path).expanduser()))
        print(f"(image {path} goes with your next message)")
    except ImageError as err:
        print(f"[{err}]")


def _reply(session: ChatSession, line: str, console: Console | None = None) -> None:
    console = console or Console(highlight=False, soft_wrap=True)
    thinking = False
    try:
        for event in session.send(line):
            if thinking and not isinstance(event, Reasoning):
                console.print()  # the reasoning ends on a line of its own
            thinking = isinstance(event, Reasoning)
            _show(console, event)
    except ContextWindowError as err:
        print(f"[{err}; /reset starts a new conversation]", end="")
    except ImageError as err:
        print(f"[{err}]", end="")
    print()


def _show(console: Console, event: ReplyEvent) -> None:
    """Reasoning dimmed, content as it is, a tool call as `[call name]` then its arguments."""
    if isinstance(event, ToolCallStart):
        console.print(f"\n[call {event.name}] ", end="", style="bold", markup=False)
    else:
        style = "dim" if isinstance(event, Reasoning) else None
        console.print(event.text, end="", style=style, markup=False)


def register(app: typer.Typer) -> None:
    app.command("chat")(with_engine_options(chat_command))
