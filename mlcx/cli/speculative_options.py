"""The speculative-decoding options shared by generate, chat, serve and bench."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from mlcx.cli.runtime_options import resolve_artifact
from mlcx.runtime.speculative.proposer import PROPOSER_NAMES

SpeculativeName = Enum("SpeculativeName", {n: n for n in PROPOSER_NAMES}, type=str)  # type: ignore[misc]

SpeculativeOption = Annotated[
    SpeculativeName | None,
    typer.Option(
        "--speculative",
        help="Draft tokens and verify them in one step: ngram (prompt lookup in the "
        "sequence's own prompt and output) or draft (a small model, --draft). Off while more "
        "than 4 sequences run.",
    ),
]
DraftOption = Annotated[
    str | None,
    typer.Option(
        "--draft",
        help="The draft model for --speculative draft: an artifact dir or a model to compile; "
        "its tokenizer must equal the target's.",
    ),
]
NumSpeculativeOption = Annotated[
    int, typer.Option("--num-speculative", help="Tokens drafted per step at most.")
]


def speculation(
    speculative: SpeculativeName | None, draft: str | None, num_speculative: int, quiet=False
) -> dict:
    """EngineConfig fields for the options (the draft model compiled first if need be)."""
    if speculative is None:
        return {}
    path = str(resolve_artifact(draft, quiet=quiet).path) if draft else None
    return dict(speculative=speculative.value, draft=path, num_speculative=num_speculative)
