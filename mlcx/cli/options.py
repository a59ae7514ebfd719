"""Option types shared by several commands; choices come from the registries."""

from __future__ import annotations

from enum import Enum

from mlcx.passes.quantization.schemes import QUANTIZATIONS
from mlcx.runtime.artifact import KV_DTYPES
from mlcx.targets.registry import TARGETS


def _choices(name: str, registry: dict) -> type[Enum]:
    return Enum(name, {key: key for key in registry}, type=str)  # type: ignore[return-value]


TargetName = _choices("TargetName", TARGETS)
QuantizationName = _choices("QuantizationName", QUANTIZATIONS)
KVDtype = _choices("KVDtype", dict.fromkeys(KV_DTYPES))


def describe(registry: dict, attr: str) -> str:
    return "; ".join(f"{name}: {getattr(item, attr)}" for name, item in registry.items())
