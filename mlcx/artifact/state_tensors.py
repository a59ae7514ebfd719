"""The per-sequence state of a hybrid model's non-attention layers, as the artifact records it.

A short convolution, a Gated DeltaNet or a Mamba-2 layer keeps a fixed-size state per sequence
instead of KV pages. The compiled step functions take, after the KV pages, `states`: for each
state layer in layer order its tensors in a fixed order (conv, then recurrent or ssm), each with
the state slot as its leading axis (docs/architecture.md, "The state cache"). The artifact
lists those tensors without the slot axis, so that every runner allocates them the same way and
every budget counts the same bytes. A layer with state tensors has no KV pages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

# f32 on CPU; on GPU targets a conv window may follow the activations (a recurrent state stays
# f32: it accumulates over thousands of steps)
STATE_DTYPES = ("float32", "float16", "bfloat16")
_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class StateTensor:
    layer: int  # the decoder layer that owns it
    name: str  # its role in the layer: "conv", "recurrent", "ssm"
    shape: tuple[int, ...]  # one slot's shape (the slot axis left out)
    dtype: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError(f"a state tensor of layer {self.layer} has no name")
        if not self.shape or any(not isinstance(d, int) or d < 1 for d in self.shape):
            raise ValueError(
                f"state tensor {self.key} has shape {list(self.shape)}; every dimension must "
                "be a positive integer (the slot axis is left out)"
            )
        if self.dtype not in STATE_DTYPES:
            raise ValueError(
                f"state tensor {self.key} has dtype {self.dtype!r}, not one of "
                f"{', '.join(STATE_DTYPES)}"
            )

    @property
    def key(self) -> str:
        return f"{self.layer}.{self.name}"

    @property
    def slot_bytes(self) -> int:
        return math.prod(self.shape) * _ITEMSIZE[self.dtype]

    def slots_shape(self, num_slots: int) -> tuple[int, ...]:
        """The allocated tensor's shape: `num_slots` slots first."""
        return (num_slots, *self.shape)

    @property
    def numpy_dtype(self) -> np.dtype:
        """The host dtype of one element (bfloat16 has none: its 2 bytes as uint16)."""
        return np.dtype("uint16" if self.dtype == "bfloat16" else self.dtype)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StateTensor:
        unknown = set(data) - {"layer", "name", "shape", "dtype"}
        if unknown:
            raise ValueError(f"a state tensor has unknown fields {sorted(unknown)}")
        shape = tuple(data["shape"])
        return cls(int(data["layer"]), str(data["name"]), shape, str(data["dtype"]))


def parse_state_tensors(items: Iterable[Any]) -> tuple[StateTensor, ...]:
    """StateTensors from the config file's list (dicts) or already typed ones."""
    return tuple(t if isinstance(t, StateTensor) else StateTensor.from_dict(t) for t in items)


def check_state_tensors(tensors: tuple[StateTensor, ...], num_layers: int) -> None:
    """The order the step functions take them in: layers ascending, each layer's tensors
    together, no tensor twice; every layer one of the model's."""
    for t in tensors:
        if not 0 <= t.layer < num_layers:
            raise ValueError(f"state tensor {t.key}: the model has layers 0..{num_layers - 1}")
    keys = [(t.layer, t.name) for t in tensors]
    if len(set(keys)) != len(keys):
        raise ValueError("a state tensor is listed twice; list each (layer, name) once")
    layers = [t.layer for t in tensors]
    if layers != sorted(layers):
        raise ValueError(
            f"state tensors must be listed in layer order (the step functions' order), got "
            f"layers {layers}"
        )


def state_layers(tensors: tuple[StateTensor, ...]) -> tuple[int, ...]:
    """The layers that keep state (and no KV pages), ascending."""
    return tuple(sorted({t.layer for t in tensors}))


def state_slot_bytes(tensors: tuple[StateTensor, ...]) -> int:
    """Device bytes of one sequence's state over every state layer: one slot."""
    return sum(t.slot_bytes for t in tensors)
