"""Option types shared by several commands; choices come from the registries."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from mlcx.artifact.config import KV_DTYPES
from mlcx.quantization.schemes import QUANTIZATIONS
from mlcx.targets.registry import TARGETS


def _choices(name: str, registry: dict) -> type[Enum]:
    return Enum(name, {key: key for key in registry}, type=str)  # type: ignore[return-value]


TargetName = _choices("TargetName", TARGETS)
QuantizationName = _choices("QuantizationName", QUANTIZATIONS)
KVDtype = _choices("KVDtype", dict.fromkeys(KV_DTYPES))
# for run commands that may compile MODEL first (mlcx.cli.runtime_options.resolve_artifact)
KVDtypeOption = Annotated[
    KVDtype | None,
    typer.Option(
        "--kv-dtype",
        help="KV cache dtype when MODEL is compiled here (default: the math's; see `mlcx "
        "compile --kv-dtype`); an artifact must have been compiled with it.",
    ),
]


def kv_dtype_value(option: Enum | None) -> str | None:
    return option.value if option is not None else None


LINEAR_KERNELS_HELP = (
    "cpu: kernels of the linear layers. int16: mlcx's (int16 activations, fast); float: "
    "TVM's float32 dequantize-matmul for quantized weights (exact to the reference, slower); "
    "tvm: TVM's plain kernels for every linear (what `mlcx tune` can tune)."
)


def describe(registry: dict, attr: str) -> str:
    return "; ".join(f"{name}: {getattr(item, attr)}" for name, item in registry.items())
