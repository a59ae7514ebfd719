"""The adapter slots a model compiled on first use (the JIT) needs for its adapters: one slot
each, their largest rank, the projections any of them changes."""

from __future__ import annotations

from collections.abc import Sequence

from mlcx.frontends.lora.layout import TARGET_OF
from mlcx.frontends.lora.read import read_adapter
from mlcx.frontends.source import load_source
from mlcx.kernels.lora_layout import LoraSpec


def slots_for(model: str, adapters: Sequence[tuple[str, str]]) -> LoraSpec | None:
    if not adapters:
        return None
    source = load_source(model)
    read = [read_adapter(path, source.arch, source.config) for _, path in adapters]
    targets = tuple({TARGET_OF[slot] for adapter in read for slot in adapter.slots})
    return LoraSpec(len(read), max(a.rank for a in read), targets)
