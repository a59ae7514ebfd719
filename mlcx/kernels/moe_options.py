"""What mixtures of experts differ in: the router's scoring and bias, expert biases, and the
gated activation between an expert's gate/up and down projections (fused into the down
projection's kernels on every target). Typed, validated once where a family's config is read;
the kernel specs carry the parts a kernel needs (a bias flag, the activation).

gpt-oss (GPT_OSS): router logits with a bias, top-k of the logits then a softmax over the k
chosen, a bias on every expert's gate/up and down rows, and the clamped SwiGLU

    gate = min(gate, 7); up = clip(up, -7, 7); out = (up + 1) * gate * sigmoid(1.702 * gate)

(transformers' GptOssExperts._apply_gate). Its checkpoints interleave gate and up rows; they
are de-interleaved at import (mlcx.quantization.mxfp4_blocks), so no kernel reads them so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from tvm import tirx

SCORINGS = ("softmax", "topk_softmax")


def _finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"MoE option {name} must be finite, not {value}")


@dataclass(frozen=True)
class GluActivation:
    """out = (up' + up_shift) * gate' * sigmoid(alpha * gate'), where gate' = min(gate, limit)
    and up' = clip(up, -limit, limit) (no clamp when limit is None). The default is SwiGLU,
    silu(gate) * up."""

    alpha: float = 1.0
    limit: float | None = None
    up_shift: float = 0.0

    def __post_init__(self) -> None:
        for name in ("alpha", "up_shift"):
            _finite(name, getattr(self, name))
        if self.alpha <= 0:
            raise ValueError(f"the gated activation's alpha must be positive, not {self.alpha}")
        if self.limit is not None and not (math.isfinite(self.limit) and self.limit > 0):
            raise ValueError(f"the gated activation's limit must be positive, not {self.limit}")

    @property
    def plain(self) -> bool:
        """silu(gate) * up, the SwiGLU of every other family."""
        return self == GluActivation()

    @property
    def tag(self) -> str:
        """A kernel-name fragment ("" for plain SwiGLU), one per distinct activation."""
        if self.plain:
            return ""
        limit = "none" if self.limit is None else f"{self.limit:g}"
        text = f"_glu_a{self.alpha:g}_l{limit}_s{self.up_shift:g}"
        return text.replace(".", "p").replace("-", "m")

    def annotation(self) -> str:
        """The activation as text (a block annotation of the TE activation, mlcx.kernels.moe)."""
        return f"{self.alpha!r},{self.limit!r},{self.up_shift!r}"

    @staticmethod
    def from_annotation(text: str) -> GluActivation:
        alpha, limit, shift = text.split(",")
        return GluActivation(float(alpha), None if limit == "None" else float(limit), float(shift))

    def apply(
        self, gate, up, exp: Callable, const: Callable[[float], tirx.PrimExpr]
    ) -> tirx.PrimExpr:
        """The activation of float32 gate and up expressions (scalars or vectors): `exp` is
        the target's exponential of such an expression, `const(v)` a constant of their kind."""
        if self.limit is not None:
            gate = tirx.min(gate, const(self.limit))
            up = tirx.max(tirx.min(up, const(self.limit)), const(-self.limit))
        if self.up_shift:
            up = up + const(self.up_shift)
        scaled = gate if self.alpha == 1.0 else gate * const(self.alpha)
        return gate / (const(1.0) + exp(-scaled)) * up


SILU = GluActivation()
GPT_OSS_GLU = GluActivation(alpha=1.702, limit=7.0, up_shift=1.0)


@dataclass(frozen=True)
class MoEOptions:
    """router_bias: the router is a linear with a bias (added to its logits)
    scoring:     "softmax": a softmax over every expert, then the top k (Mixtral, Qwen3-MoE);
                 "topk_softmax": the top k logits, then a softmax over those k (gpt-oss)
    renormalize: (softmax scoring) the k weights divided by their sum
    expert_bias: every expert's gate/up and down rows have a bias (a value per stacked row)
    glu:         the gated activation fused into the down projection"""

    router_bias: bool = False
    scoring: str = "softmax"
    renormalize: bool = False
    expert_bias: bool = False
    glu: GluActivation = field(default_factory=GluActivation)

    def __post_init__(self) -> None:
        if self.scoring not in SCORINGS:
            raise ValueError(f"MoE scoring {self.scoring!r} is not one of {', '.join(SCORINGS)}")
        if self.renormalize and self.scoring != "softmax":
            raise ValueError("renormalize applies to softmax scoring; a top-k softmax sums to 1")


GPT_OSS = MoEOptions(router_bias=True, scoring="topk_softmax", expert_bias=True, glu=GPT_OSS_GLU)
