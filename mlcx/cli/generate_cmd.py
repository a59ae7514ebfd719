"""`mlcx generate MODEL --prompt TEXT [--chat] [--json] ...`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from mlcx.cli.engine_options import EngineOptions, with_engine_options
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.structured.files import output_constraint
from mlcx.runtime.vision.decode import read_image_file


def generate_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Artifact dir (from mlcx compile), or a model to compile for this CPU first."
        ),
    ],
    prompt: Annotated[str, typer.Option("--prompt", "-p", help="The prompt text.")],
    chat: Annotated[
        bool, typer.Option(help="Wrap the prompt as a user message in the model's chat template.")
    ] = False,
    system: Annotated[str | None, typer.Option(help="System message (with --chat).")] = None,
    image: Annotated[
        list[Path] | None,
        typer.Option(help="An image to send before the prompt (repeatable; implies --chat)."),
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens to generate at most.")] = 256,
    temperature: Annotated[float | None, typer.Option(help="0 = greedy.")] = None,
    top_p: Annotated[float | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    json_schema: Annotated[
        Path | None, typer.Option(help="The output is JSON valid against the schema in FILE.")
    ] = None,
    regex: Annotated[str | None, typer.Option(help="The whole output matches REGEX.")] = None,
    grammar: Annotated[
        Path | None,
        typer.Option(help="The output is in the grammar in FILE: Lark, or GBNF if FILE is .gbnf."),
    ] = None,
    adapter: Annotated[
        str | None,
        typer.Option(help="The --lora adapter to run with (default: the first; none: no adapter)."),
    ] = None,
    *,
    engine: EngineOptions,
) -> None:
    """Generate a completion for one prompt, streaming it to stdout."""
    constraint = output_constraint(json_schema, regex, grammar)
    llm = LLM(engine.artifact(model, quiet=as_json), engine.engine_config(quiet=as_json))
    params = llm.default_params(
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        constraint=constraint,
    )
    images = [read_image_file(path) for path in image or ()]
    if chat or images:
        prompt_ids, images = llm.chat_inputs(_messages(prompt, system, images))
    else:
        prompt_ids = llm.engine.tokenize_prompt(prompt)
    text, tokens, reason = [], [], None
    lora = engine.adapter_request(adapter)
    for delta in llm.stream(prompt_ids, params, images, lora_request=lora):
        text.append(delta.text)
        tokens.extend(delta.token_ids)
        reason = delta.finish_reason or reason
        if not as_json:
            sys.stdout.write(delta.text)
            sys.stdout.flush()
    if as_json:
        print(
            json.dumps(
                {
                    "text": "".join(text),
                    "token_ids": tokens,
                    "prompt_token_ids": prompt_ids,
                    "finish_reason": reason,
                }
            )
        )
    else:
        print()


def _messages(prompt: str, system: str | None, images: list) -> list[dict]:
    content: str | list[dict] = prompt
    if images:
        parts = [{"type": "image", "image": image} for image in images]
        content = [*parts, {"type": "text", "text": prompt}]
    head = [{"role": "system", "content": system}] if system else []
    return [*head, {"role": "user", "content": content}]


def register(app: typer.Typer) -> None:
    app.command("generate")(with_engine_options(generate_command))
