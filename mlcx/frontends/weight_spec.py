"""How a model's parameters are made from a source's tensors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mlcx.quantization.schemes import Role

RowTransform = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class WeightSpec:
    """One model weight built from source tensors concatenated along rows (axis 0).

    For matrices (LINEAR, EMBEDDING) `target` is the module path and the parameters are
    `target.<suffix>` for each array of its weight format; for VECTOR it is the parameter name.
    `transforms[i]` (optional) reorders the rows of source i before concatenation.
    """

    target: str
    role: Role
    sources: tuple[str, ...]
    transforms: tuple[RowTransform | None, ...] = field(default=())

    def transform(self, index: int) -> RowTransform | None:
        return self.transforms[index] if index < len(self.transforms) else None
