"""The Qwen-VL vision transformer over a variable number of patches: patch projection (and
Qwen3-VL's resampled position grid), pre-norm blocks with fused qkv, 2-D RoPE and attention
over the whole image or within windows, a SwiGLU or GELU MLP.

Inputs come from the runtime in the encoder's patch order (runtime.vision.qwen_inputs): the
patches of each 2x2 merge group adjacent, and for window attention the groups of each window
together. Module attributes carry Hugging Face's names under `visual.`."""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.qwen_vision.config import VisionConfig
from mlcx.kernels.vision_rope import rope_table_te, vision_rope_te, window_bias_te

ACTIVATIONS = {"silu": op.silu, "gelu_tanh": lambda x: op.gelu(x, approximate="tanh")}


def norm(cfg: VisionConfig, width: int, dtype: str) -> nn.Module:
    if cfg.norm == "rms":
        return nn.RMSNorm(width, -1, 1e-6, bias=False, dtype=dtype)
    return nn.LayerNorm(width, 1e-6, dtype=dtype)


class PatchEmbed(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.proj = nn.Linear(cfg.patch_features, cfg.hidden_size, bias=cfg.patch_bias, dtype=dtype)

    def forward(self, patches: nn.Tensor) -> nn.Tensor:
        return self.proj(patches)


class Attention(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size, bias=True, dtype=dtype)
        self.proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=True, dtype=dtype)

    def forward(self, x: nn.Tensor, rope: nn.Tensor, bias: nn.Tensor | None) -> nn.Tensor:
        cfg = self.cfg
        n, heads, d = x.shape[0], cfg.num_heads, cfg.head_dim
        qkv = op.reshape(self.qkv(x), (n, 3 * heads, d))
        q, k, v = op.split(qkv, 3, axis=1)

        def turn(t: nn.Tensor) -> nn.Tensor:
            return op.tensor_expr_op(vision_rope_te, "vision_rope", [t, rope])

        def heads_first(t: nn.Tensor) -> nn.Tensor:  # [n, heads, d] -> [heads, n, d]
            return op.permute_dims(t, [1, 0, 2])

        q, k, v = heads_first(turn(q)), heads_first(turn(k)), heads_first(v)
        scores = op.matmul(q, op.permute_dims(k, [0, 2, 1])) * (d**-0.5)
        if bias is not None:
            scores = scores + bias
        out = op.matmul(op.softmax(scores, axis=-1), v)
        return self.proj(op.reshape(op.permute_dims(out, [1, 0, 2]), (n, heads * d)))


class MLP(nn.Module):
    """SwiGLU (gate_proj, up_proj, down_proj) or act(fc1) fc2 (linear_fc1, linear_fc2)."""

    def __init__(self, cfg: VisionConfig, dtype: str):
        self.act = ACTIVATIONS[cfg.act]
        self.swiglu = cfg.mlp == "swiglu"
        h, m = cfg.hidden_size, cfg.intermediate_size
        if self.swiglu:
            self.gate_proj = nn.Linear(h, m, bias=True, dtype=dtype)
            self.up_proj = nn.Linear(h, m, bias=True, dtype=dtype)
            self.down_proj = nn.Linear(m, h, bias=True, dtype=dtype)
        else:
            self.linear_fc1 = nn.Linear(h, m, bias=True, dtype=dtype)
            self.linear_fc2 = nn.Linear(m, h, bias=True, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        if self.swiglu:
            return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))
        return self.linear_fc2(self.act(self.linear_fc1(x)))


class Block(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.norm1 = norm(cfg, cfg.hidden_size, dtype)
        self.norm2 = norm(cfg, cfg.hidden_size, dtype)
        self.attn = Attention(cfg, dtype)
        self.mlp = MLP(cfg, dtype)

    def forward(self, x: nn.Tensor, rope: nn.Tensor, bias: nn.Tensor | None) -> nn.Tensor:
        x = x + self.attn(self.norm1(x), rope, bias)
        return x + self.mlp(self.norm2(x))


def rope_table(positions: nn.Tensor, cfg: VisionConfig) -> nn.Tensor:
    """The 2-D RoPE's cos and sin per patch and feature pair, shared by every layer."""

    def table(pt):
        return rope_table_te(pt, cfg.head_dim, cfg.rope_theta)

    return op.tensor_expr_op(table, "rope_table", [positions])


def window_bias(windows: nn.Tensor, dtype: str) -> nn.Tensor:
    """The additive mask of the windowed layers (runtime-given window id of each patch)."""
    return op.tensor_expr_op(lambda wt: window_bias_te(wt, dtype), "window_bias", [windows])


def resampled_positions(table: nn.Tensor, index: nn.Tensor, weight: nn.Tensor) -> nn.Tensor:
    """Qwen3-VL: each patch's position embedding, a weighted sum of 4 rows of the learned
    grid (bilinear resampling to the image's grid; the runtime gives rows and weights)."""
    n, taps = index.shape
    rows = op.take(table, op.reshape(index, (n * taps,)), axis=0)
    rows = op.reshape(rows, (n, taps, table.shape[1]))
    return op.sum(rows * op.reshape(weight.astype(table.dtype), (n, taps, 1)), axis=1)
