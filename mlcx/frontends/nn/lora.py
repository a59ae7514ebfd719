"""A step's LoRA inputs as graph tensors, which the projections named in them read: each token
row adds its own adapter's delta (mlcx.kernels.lora) to the base projection's output."""

from __future__ import annotations

from dataclasses import dataclass

from tvm.relax.frontend import nn

from mlcx.kernels.lora import LoraOps
from mlcx.kernels.lora_layout import LoraLayout


@dataclass
class LoraStep:
    ops: LoraOps
    layout: LoraLayout
    rows: nn.Tensor  # int32 [tokens]: each token's slot
    scales: nn.Tensor  # float32 [tokens]
    weights: dict[str, tuple[nn.Tensor, nn.Tensor]]  # "layers.{i}.{target}" -> (A, B)

    @classmethod
    def of(
        cls,
        layout: LoraLayout,
        kind: str,
        rows: nn.Tensor,
        scales: nn.Tensor,
        arrays: list[nn.Tensor],
    ) -> LoraStep:
        """From the step's `lora_weights` parameter (layout.arrays() order); `kind`: the
        kernels' ("cpu" or "gpu")."""
        names = [name.removesuffix(".lora_a") for name, _ in layout.arrays()[::2]]
        pairs = {name: (arrays[2 * i], arrays[2 * i + 1]) for i, name in enumerate(names)}
        spec = layout.spec
        ops = LoraOps(kind, layout.dtype, layout.weight_dtype, spec.rank, spec.slots + 1)
        return cls(ops, layout, rows, scales, pairs)

    def apply(self, name: str, x: nn.Tensor, y: nn.Tensor) -> nn.Tensor:
        """y plus the delta of the projection `name` ("layers.{i}.{target}") where it takes
        adapters; y as it is otherwise."""
        if name not in self.weights:
            return y
        a, b = self.weights[name]
        target = self.layout.target(name.split(".", 2)[2])
        return self.ops.apply(target, x, y, a, b, self.rows, self.scales)
