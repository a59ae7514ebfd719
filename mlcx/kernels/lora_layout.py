"""The LoRA inputs of a model compiled with adapter slots, written once: which projections take
adapters, and the shapes of their stacked low-rank weights. The model export builds its
functions' `lora_weights` parameter from this, the runtime stacks adapters into arrays of these
shapes, in this order (mlcx.runtime.lora).

For each layer, for each target in `targets` order, two arrays:
- A [slots + 1, parts * rank, in_features]: each fused part's A (rank rows) side by side;
- B [slots + 1, rank, out_features]: B transposed (so that the kernels run along the output
  features); part p's columns are the output rows of part p, and read A's rows p*rank...
Slot 0 holds zeros: a token with no adapter. A rank below `rank` is zero-padded. No TVM here:
the runtime reads this without TVM's compiler.
"""

from __future__ import annotations

from dataclasses import dataclass

# The projections of a decoder layer, by mlcx's parameter names, in input order.
TARGETS = ("attn.qkv", "attn.o", "mlp.gate_up", "mlp.down")
WEIGHT_DTYPES = ("float16", "float32")


def default_weight_dtype(kernel_kind: str, activation_dtype: str) -> str:
    """How A and B are stored when the compile does not say. On CPU float16 whatever the
    activations: a decode step reads every active adapter's A and B anew (megabytes that do not
    stay in cache), so half the bytes is most of their cost; the kernels widen each value to
    float32 in registers (as llama.cpp's GGUF adapters, float16 by default, are used). GPU
    targets keep the activations' dtype: a float32 WebGPU plan is one that runs without
    shader-f16."""
    return "float16" if kernel_kind == "cpu" else activation_dtype


@dataclass(frozen=True)
class LoraSpec:
    """What `mlcx compile --lora-slots N --lora-rank R [--lora-targets ...]` asked for."""

    slots: int  # adapters one batch can mix (slot 0, no adapter, comes on top)
    rank: int  # the largest adapter rank they can have
    targets: tuple[str, ...] = TARGETS
    dtype: str | None = None  # A and B as stored; None: the compile's default_weight_dtype

    def __post_init__(self) -> None:
        if self.slots < 1 or self.rank < 1:
            raise ValueError(
                f"LoRA slots and rank must be positive, got {self.slots} slots of rank {self.rank}"
            )
        unknown = [t for t in self.targets if t not in TARGETS]
        if unknown or not self.targets or len(set(self.targets)) != len(self.targets):
            raise ValueError(
                f"LoRA targets must be distinct names among {', '.join(TARGETS)}, got "
                f"{', '.join(self.targets) or 'none'}"
            )
        if self.dtype is not None and self.dtype not in WEIGHT_DTYPES:
            raise ValueError(
                f"LoRA weights are stored as {' or '.join(WEIGHT_DTYPES)}, not {self.dtype!r}"
            )
        ordered = tuple(t for t in TARGETS if t in self.targets)
        object.__setattr__(self, "targets", ordered)

    def to_dict(self) -> dict:
        out = {"slots": self.slots, "rank": self.rank, "targets": list(self.targets)}
        return out if self.dtype is None else {**out, "dtype": self.dtype}

    @classmethod
    def from_dict(cls, data: dict) -> LoraSpec:
        # an artifact written before the dtype was recorded stored A and B as its activations
        targets = tuple(data["targets"])
        return cls(int(data["slots"]), int(data["rank"]), targets, data.get("dtype"))


@dataclass(frozen=True)
class LoraTarget:
    name: str  # one of TARGETS
    in_features: int
    parts: tuple[int, ...]  # output rows of each fused part (q, k, v; gate, up)

    @property
    def out_features(self) -> int:
        return sum(self.parts)


@dataclass(frozen=True)
class LoraLayout:
    spec: LoraSpec
    num_layers: int
    targets: tuple[LoraTarget, ...]  # one per spec target, in its order
    dtype: str  # of the activations the projections take and give

    @property
    def weight_dtype(self) -> str:
        """Of A and B: the spec's, else (artifacts from before it was recorded) the
        activations'."""
        return self.spec.dtype or self.dtype

    def target(self, name: str) -> LoraTarget:
        return next(t for t in self.targets if t.name == name)

    def a_shape(self, target: LoraTarget) -> tuple[int, int, int]:
        return (self.spec.slots + 1, len(target.parts) * self.spec.rank, target.in_features)

    def b_shape(self, target: LoraTarget) -> tuple[int, int, int]:
        return (self.spec.slots + 1, self.spec.rank, target.out_features)

    def arrays(self) -> list[tuple[str, tuple[int, int, int]]]:
        """(name, shape) of every array of the `lora_weights` parameter, in order."""
        out = []
        for layer in range(self.num_layers):
            for target in self.targets:
                prefix = f"layers.{layer}.{target.name}"
                out += [(f"{prefix}.lora_a", self.a_shape(target))]
                out += [(f"{prefix}.lora_b", self.b_shape(target))]
        return out

    def index(self, layer: int, target: str) -> int:
        """Position of the layer's A for `target` in `arrays()` (its B follows)."""
        names = [t.name for t in self.targets]
        return 2 * (layer * len(names) + names.index(target))
