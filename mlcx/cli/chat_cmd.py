"""`mlcx chat MODEL`: an interactive conversation in the terminal."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mlcx.cli.engine_options import EngineOptions, with_engine_options
from mlcx.errors import ContextWindowError
from mlcx.runtime.chat_session import ChatSession
from mlcx.runtime.llm import LLM

HELP = "Type a message. /reset starts over, /exit quits (or Ctrl-D)."


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
        elif command:
            _reply(session, line)


def _reply(session: ChatSession, line: str) -> None:
    try:
        for text in session.send(line):
            sys.stdout.write(text)
            sys.stdout.flush()
    except ContextWindowError as err:
        print(f"[{err}; /reset starts a new conversation]", end="")
    print()


def register(app: typer.Typer) -> None:
    app.command("chat")(with_engine_options(chat_command))
