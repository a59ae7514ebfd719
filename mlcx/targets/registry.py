"""The compilation targets; `mlcx compile --target` choices come from here."""

from __future__ import annotations

from mlcx.targets.base import Target
from mlcx.targets.cpu import CpuTarget

TARGETS: dict[str, Target] = {t.name: t for t in [CpuTarget()]}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of: {', '.join(TARGETS)}") from None
