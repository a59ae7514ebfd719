"""The engine options, declared once: every command that runs the engine (generate, chat,
serve, bench profile, bench speculative) declares `engine: EngineOptions` and is wrapped in
`with_engine_options`, which puts the options on its command line and builds the value."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from mlcx.artifact.config import Artifact
from mlcx.cli.options import KVDtype, SpeculativeName
from mlcx.compile.jit import resolve_artifact
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.lora.fit import slots_for
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.speculative.config import DEFAULT_NUM_SPECULATIVE, SpeculativeConfig

MaxBatchOption = Annotated[
    int | None,
    typer.Option(
        help="Sequences decoded together at most (default: 16; bench commands: the most "
        "concurrent streams)."
    ),
]
KVDtypeOption = Annotated[
    KVDtype | None,
    typer.Option(
        help="KV cache dtype when MODEL is compiled here (default: the math's; float16 on "
        "cpu for bench commands, as llama.cpp); an artifact must have been compiled with it."
    ),
]
SpeculativeOption = Annotated[
    SpeculativeName | None,
    typer.Option(
        help="Draft tokens and verify them in one step: ngram (prompt lookup in the "
        "sequence's own prompt and output) or draft (a small model, --draft). Off while "
        "more than 4 sequences run."
    ),
]
DraftOption = Annotated[
    str | None,
    typer.Option(
        help="The draft model for --speculative draft: an artifact dir or a model to "
        "compile; its tokenizer must equal the target's."
    ),
]
NumSpeculativeOption = Annotated[int, typer.Option(help="Tokens drafted per step at most.")]
LoraOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Load a LoRA adapter, NAME=PATH (a PEFT folder or a llama.cpp GGUF adapter; "
        "repeatable). A model compiled here gets adapter slots for them; an artifact needs "
        "`mlcx compile --lora-slots`. Requests pick one: model NAME:ADAPTER (serve), --adapter "
        "(generate, chat: default the first)."
    ),
]

# EngineOptions field -> its option
OPTIONS: dict[str, Any] = {
    "max_batch": MaxBatchOption,
    "kv_dtype": KVDtypeOption,
    "speculative": SpeculativeOption,
    "draft": DraftOption,
    "num_speculative": NumSpeculativeOption,
    "lora": LoraOption,
}


@dataclass(frozen=True)
class EngineOptions:
    max_batch: int | None = None
    kv_dtype: KVDtype | None = None
    speculative: SpeculativeName | None = None
    draft: str | None = None  # an artifact or a model to compile
    num_speculative: int = DEFAULT_NUM_SPECULATIVE
    lora: list[str] | None = None  # NAME=PATH each

    @property
    def kv_dtype_name(self) -> str | None:
        return self.kv_dtype.value if self.kv_dtype is not None else None

    @property
    def adapters(self) -> tuple[tuple[str, str], ...]:
        """--lora as (name, path) pairs; a bare PATH is named by its file or folder stem."""
        pairs = []
        for given in self.lora or ():
            name, sep, path = given.partition("=")
            pairs.append((name, path) if sep else (Path(given).stem, given))
        return tuple(pairs)

    def adapter_request(self, choice: str | None) -> LoraRequest | None:
        """The adapter generate/chat run with: --adapter NAME, `none`, or the first --lora."""
        if choice == "none" or not self.adapters:
            return None
        return LoraRequest(choice or self.adapters[0][0])

    def artifact(self, model: str, quiet: bool = False) -> Artifact:
        """MODEL as an artifact, compiled with --kv-dtype (and slots for --lora's adapters)
        if it is not one yet."""
        slots = None
        if self.adapters and not Artifact.is_artifact(model):
            slots = slots_for(model, self.adapters)
        return resolve_artifact(model, quiet=quiet, kv_dtype=self.kv_dtype_name, lora_slots=slots)

    def speculative_config(self, quiet: bool = False) -> SpeculativeConfig | None:
        """The speculative settings (the draft model compiled first if need be)."""
        if self.speculative is None:
            return None
        draft = str(resolve_artifact(self.draft, quiet=quiet).path) if self.draft else None
        return SpeculativeConfig(self.speculative.value, self.num_speculative, draft)

    def engine_config(
        self, default_batch: int | None = None, quiet: bool = False, **more: Any
    ) -> EngineConfig:
        """EngineConfig of these options and `more` of its fields; `default_batch` stands in
        for an unset --max-batch (None: EngineConfig's default)."""
        batch = self.max_batch or default_batch
        sized = {"max_batch": batch} if batch is not None else {}
        speculative = self.speculative_config(quiet)
        return EngineConfig(**sized, speculative=speculative, lora=self.adapters, **more)


_DEFAULTS = {f.name: f.default for f in fields(EngineOptions)}


def with_engine_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command(..., engine: EngineOptions)` as a typer command taking the engine options."""
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "engine"]
    keyword = inspect.Parameter.KEYWORD_ONLY
    added = [
        inspect.Parameter(name, keyword, default=_DEFAULTS[name], annotation=option)
        for name, option in OPTIONS.items()
    ]

    @functools.wraps(command)
    def run(**given: Any) -> None:
        engine = EngineOptions(**{name: given.pop(name) for name in OPTIONS})
        command(engine=engine, **given)

    run.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
    return run
