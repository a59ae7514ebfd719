"""A matrix whose row ranges are stored in different formats.

A fused weight (q/k/v, gate/up) is built from several source tensors; a llama.cpp mix may
store them in different block types (Q4_K_M: q and k as Q4_K, v as Q6_K in some layers). A
`StackedFormat` keeps each range in its own format instead of converting all to one: the
planes of part i are named `p{i}_<suffix>`, and a linear layer over it runs one matmul per
part (mlcx.frontends.nn.linear), each a plain linear that every target's kernels read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm import te, tirx


@dataclass(frozen=True)
class StackedFormat:
    parts: tuple[tuple[int, Any], ...]  # (rows, WeightFormat) top to bottom

    PREFIX = "stack("

    def __post_init__(self) -> None:
        if len(self.parts) < 2:
            raise ValueError("a stacked format needs at least two parts")
        for rows, fmt in self.parts:
            if rows < 1 or isinstance(fmt, StackedFormat):
                raise ValueError(f"bad stacked part: {rows} rows of {fmt.name}")

    @property
    def name(self) -> str:
        return self.PREFIX + ",".join(f"{rows}x{fmt.name}" for rows, fmt in self.parts) + ")"

    @staticmethod
    def from_name(name: str, parse: Callable[[str], Any]) -> StackedFormat:
        if not name.endswith(")"):
            raise ValueError(f"not a weight format name: {name!r}")
        parts = []
        for item in name[len(StackedFormat.PREFIX) : -1].split(","):
            rows, _, fmt = item.partition("x")
            if not rows.isdigit():
                raise ValueError(f"not a weight format name: {name!r}")
            parts.append((int(rows), parse(fmt)))
        return StackedFormat(tuple(parts))

    @property
    def row_major(self) -> StackedFormat:
        return StackedFormat(tuple((r, getattr(f, "row_major", f)) for r, f in self.parts))

    @property
    def tiled(self) -> bool:
        return any(getattr(f, "tiled", False) for _, f in self.parts)

    @property
    def suffixes(self) -> tuple[str, ...]:
        return tuple(f"p{i}_{s}" for i, (_, fmt) in enumerate(self.parts) for s in fmt.suffixes)

    def part_params(self, params: dict, index: int) -> dict:
        """Part `index`'s planes under their own suffixes."""
        prefix = f"p{index}_"
        return {s: params[prefix + s] for s in self.parts[index][1].suffixes}

    def _check_rows(self, out_features: int) -> None:
        total = sum(rows for rows, _ in self.parts)
        if total != out_features:
            raise ValueError(f"stacked parts cover {total} rows, not {out_features}")

    def param_specs(self, out_features: int, in_features: int):
        self._check_rows(out_features)
        specs = {}
        for i, (rows, fmt) in enumerate(self.parts):
            for suffix, spec in fmt.param_specs(rows, in_features).items():
                specs[f"p{i}_{suffix}"] = spec
        return specs

    def pack(self, weight: np.ndarray) -> dict[str, np.ndarray]:
        self._check_rows(weight.shape[0])
        params, start = {}, 0
        for i, (rows, fmt) in enumerate(self.parts):
            for suffix, array in fmt.pack(weight[start : start + rows]).items():
                params[f"p{i}_{suffix}"] = array
            start += rows
        return params

    def unpack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate(
            [fmt.unpack(self.part_params(params, i)) for i, (_, fmt) in enumerate(self.parts)]
        )

    def element(self, params: dict[str, te.Tensor], n, k, dtype: str) -> tirx.PrimExpr:
        """Row n's element from whichever part holds that row (for generic computes; linear
        layers split the matmul by part instead)."""
        bounds, start = [], 0
        for rows, _ in self.parts:
            bounds.append((start, start + rows))
            start += rows
        value = None
        for i in reversed(range(len(self.parts))):
            first, end = bounds[i]
            fmt = self.parts[i][1]
            here = fmt.element(self.part_params(params, i), n - first, k, dtype)
            value = here if value is None else tirx.if_then_else(n < end, here, value)
        return value
