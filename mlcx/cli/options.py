"""Option types shared by several commands; choices come from the registries."""

from __future__ import annotations

from enum import Enum

from mlcx.artifact.config import KV_DTYPES
from mlcx.kernels.lora_layout import WEIGHT_DTYPES as LORA_WEIGHT_DTYPES
from mlcx.quantization.schemes import QUANTIZATIONS
from mlcx.runtime.speculative.config import PROPOSERS
from mlcx.targets.registry import TARGETS


def _choices(name: str, registry: dict) -> type[Enum]:
    return Enum(name, {key: key for key in registry}, type=str)  # type: ignore[return-value]


TargetName = _choices("TargetName", TARGETS)
QuantizationName = _choices("QuantizationName", QUANTIZATIONS)
KVDtype = _choices("KVDtype", dict.fromkeys(KV_DTYPES))
LoraDtype = _choices("LoraDtype", dict.fromkeys(LORA_WEIGHT_DTYPES))
SpeculativeName = _choices("SpeculativeName", PROPOSERS)
LINEAR_KERNELS_HELP = (
    "cpu: kernels of the linear layers. int16: mlcx's (int16 activations, fast); int8: "
    "mlcx's with int8 activations in prefills on 4-bit weights, as llama.cpp (AVX512-VNNI "
    "hosts; faster prefill, tokens may drift from int16's); float: "
    "TVM's float32 dequantize-matmul for quantized weights (exact to the reference, slower); "
    "tvm: TVM's plain kernels for every linear (what `mlcx tune` can tune)."
)


def describe(registry: dict, attr: str) -> str:
    return "; ".join(f"{name}: {getattr(item, attr)}" for name, item in registry.items())
