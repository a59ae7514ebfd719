"""The geometry of the state layers' kernels, validated once (ValueError), and the state tensors
each layer keeps per slot (shape without the slot axis, dtype): the runners allocate them from
the artifact's record of these.

Short conv: `conv` [slots, channels, kernel - 1], the sequence's last kernel - 1 inputs, oldest
first, in the activation dtype. Gated DeltaNet: its `conv` over the packed q|k|v channels, then
`recurrent` [slots, v_heads, k_dim, v_dim] float32 (accumulated over thousands of steps).
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPES = ("float32", "float16")
ACTIVATIONS = (None, "silu")
# Which k head a v head reads when there are more v heads than k heads: transformers groups
# them (v head h reads k head h // (v_heads / k_heads)); llama.cpp's GGUF files reorder the v
# heads so that a tiled repeat serves them (v head h reads k head h % k_heads).
HEAD_ORDERS = ("grouped", "tiled")
CHUNK = 64  # tokens of one chunk of the chunked (WY/UT) prefill
L2_EPS = 1e-6  # transformers' l2norm of q and k in the delta rule


def _check_dtype(name: str, dtype: str) -> None:
    if dtype not in DTYPES:
        raise ValueError(f"{name} must be one of {', '.join(DTYPES)}, not {dtype!r}")


@dataclass(frozen=True)
class ConvShape:
    """A depthwise causal convolution of `kernel` taps over `channels`, optional bias and
    activation after it; x, weight [channels, kernel], bias and y in `dtype`."""

    channels: int
    kernel: int
    dtype: str = "float32"
    bias: bool = False
    activation: str | None = None

    def __post_init__(self) -> None:
        if self.channels < 1:
            raise ValueError(f"a convolution needs channels, not {self.channels}")
        if not 2 <= self.kernel <= 8:
            raise ValueError(f"a short convolution has 2 to 8 taps, not {self.kernel}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"conv activation must be silu or none, not {self.activation!r}")
        _check_dtype("conv dtype", self.dtype)

    @property
    def window(self) -> int:
        """Previous inputs a sequence's state keeps."""
        return self.kernel - 1

    def state(self) -> tuple[tuple[int, ...], str]:
        return (self.channels, self.window), self.dtype


@dataclass(frozen=True)
class DeltaShape:
    """A gated delta rule layer: q and k heads of k_dim features, v heads of v_dim; the kernels
    read q, k and v from the packed convolution output [tokens, 2 * k_heads * k_dim +
    v_heads * v_dim] (q heads, then k heads, then v heads), L2-normalize q and k themselves
    (eps L2_EPS), and write o [tokens, v_heads, v_dim] in `dtype`."""

    k_heads: int
    v_heads: int
    k_dim: int
    v_dim: int
    dtype: str = "float32"
    head_order: str = "grouped"

    def __post_init__(self) -> None:
        for name in ("k_heads", "v_heads", "k_dim", "v_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"delta rule {name} must be positive")
        if self.v_heads % self.k_heads:
            raise ValueError(
                f"{self.v_heads} value heads cannot share {self.k_heads} key heads evenly"
            )
        for name in ("k_dim", "v_dim"):
            if getattr(self, name) % 4:
                raise ValueError(f"delta rule {name} must be a multiple of 4")
        if self.head_order not in HEAD_ORDERS:
            raise ValueError(f"head_order must be grouped or tiled, not {self.head_order!r}")
        _check_dtype("delta rule dtype", self.dtype)

    @property
    def width(self) -> int:
        """Features of one packed q|k|v row."""
        return 2 * self.k_heads * self.k_dim + self.v_heads * self.v_dim

    def k_head(self, v_head):
        """The q/k head that v head `v_head` (an int or a TIR expression) reads."""
        if self.head_order == "tiled":
            return v_head % self.k_heads
        return v_head // (self.v_heads // self.k_heads)

    def q_offset(self, v_head):
        return self.k_head(v_head) * self.k_dim

    def k_offset(self, v_head):
        return (self.k_heads + self.k_head(v_head)) * self.k_dim

    def v_offset(self, v_head):
        return 2 * self.k_heads * self.k_dim + v_head * self.v_dim

    def state(self) -> tuple[tuple[int, ...], str]:
        return (self.v_heads, self.k_dim, self.v_dim), "float32"
