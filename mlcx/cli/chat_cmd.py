"""`mlcx chat MODEL`: an interactive conversation in the terminal."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mlcx.cli.runtime_options import resolve_artifact, sampling_from_cli
from mlcx.errors import ContextWindowError
from mlcx.runtime.llm import LLM

HELP = "Commands: /reset starts over, /exit quits (or Ctrl-D)."


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
) -> None:
    """Chat with a model; the conversation is kept until /reset."""
    llm = LLM(resolve_artifact(model))
    params = sampling_from_cli(
        llm.engine.artifact.config.sampling, max_tokens, temperature, top_p, seed
    )
    start = [{"role": "system", "content": system}] if system else []
    messages = list(start)
    print(HELP)
    while (line := _read(">>> ")) is not None:
        if line.strip() in ("/exit", "/quit"):
            break
        if line.strip() == "/reset":
            messages = list(start)
            print("(conversation cleared)")
            continue
        if not line.strip():
            continue
        messages.append({"role": "user", "content": line})
        try:
            prompt = llm.chat_prompt(messages)
            reply = "".join(_stream(llm, prompt, params))
        except ContextWindowError as err:
            messages.pop()
            print(f"[{err}; use /reset]")
            continue
        messages.append({"role": "assistant", "content": reply})


def _stream(llm: LLM, prompt: list[int], params):
    for delta in llm.stream(prompt, params):
        sys.stdout.write(delta.text)
        sys.stdout.flush()
        yield delta.text
    print()


def register(app: typer.Typer) -> None:
    app.command("chat")(chat_command)
