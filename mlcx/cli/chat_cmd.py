"""`mlcx chat MODEL`: an interactive conversation in the terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from mlcx.cli.engine_options import EngineOptions, with_engine_options
from mlcx.errors import ContextWindowError, ImageError
from mlcx.runtime.api.chat_session import ChatSession
from mlcx.runtime.api.llm import LLM
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
    *,
    engine: EngineOptions,
) -> None:
    """Chat with a model; the conversation is kept until /reset."""
    llm = LLM(engine.artifact(model), engine.engine_config())
    params = llm.default_params(
        max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed
    )
    session = ChatSession(llm, params, system)
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


def _reply(session: ChatSession, line: str) -> None:
    try:
        for text in session.send(line):
            sys.stdout.write(text)
            sys.stdout.flush()
    except ContextWindowError as err:
        print(f"[{err}; /reset starts a new conversation]", end="")
    except ImageError as err:
        print(f"[{err}]", end="")
    print()


def register(app: typer.Typer) -> None:
    app.command("chat")(with_engine_options(chat_command))
