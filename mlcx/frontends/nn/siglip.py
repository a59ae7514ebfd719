"""SigLIP's vision transformer (no pooling head), shared by the image encoders: patch
embeddings (the patch convolution, stride = kernel = patch, as a matmul over flattened
patches), pre-norm encoder layers whose patches all see each other, a final LayerNorm.

Module attributes carry Hugging Face's names, so weight mappings are prefix swaps. `cfg` is any
config with the geometry fields read here (image_size, patch_size, hidden_size, ...)."""

from __future__ import annotations

from typing import Any

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from mlcx.kernels.step_params import EMBED_IMAGE, PIXELS

VisionConfig = Any  # a family's config with the SigLIP geometry


class PatchEmbeddings(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.cfg = cfg
        features = cfg.num_channels * cfg.patch_size**2
        self.patch_embedding = nn.Linear(features, cfg.hidden_size, bias=True, dtype=dtype)
        self.position_embedding = nn.Embedding(cfg.num_patches, cfg.hidden_size, dtype=dtype)

    def forward(self, pixels: nn.Tensor) -> nn.Tensor:
        c, side, p = self.cfg.num_channels, self.cfg.patches_per_side, self.cfg.patch_size
        grid = op.reshape(pixels, (c, side, p, side, p))
        # patch (row, col) flattened as the convolution's weight is: channel, then y, then x
        patches = op.reshape(op.permute_dims(grid, [1, 3, 0, 2, 4]), (side * side, c * p * p))
        return self.patch_embedding(patches) + self.position_embedding.weight


class Attention(nn.Module):
    """Every patch sees every patch (no mask)."""

    def __init__(self, cfg: VisionConfig, dtype: str):
        self.cfg = cfg
        h = cfg.hidden_size
        self.q_proj = nn.Linear(h, h, bias=True, dtype=dtype)
        self.k_proj = nn.Linear(h, h, bias=True, dtype=dtype)
        self.v_proj = nn.Linear(h, h, bias=True, dtype=dtype)
        self.out_proj = nn.Linear(h, h, bias=True, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        n, heads = self.cfg.num_patches, self.cfg.num_heads
        d = self.cfg.hidden_size // heads

        def split(t: nn.Tensor) -> nn.Tensor:  # [n, h] -> [heads, n, d]
            return op.permute_dims(op.reshape(t, (n, heads, d)), [1, 0, 2])

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        scores = op.matmul(q, op.permute_dims(k, [0, 2, 1])) * (d**-0.5)
        out = op.matmul(op.softmax(scores, axis=-1), v)
        return self.out_proj(op.reshape(op.permute_dims(out, [1, 0, 2]), (n, heads * d)))


class MLP(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.fc1 = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=True, dtype=dtype)
        self.fc2 = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=True, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.fc2(op.gelu(self.fc1(x), approximate="tanh"))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        eps = cfg.layer_norm_eps
        self.layer_norm1 = nn.LayerNorm(cfg.hidden_size, eps, dtype=dtype)
        self.self_attn = Attention(cfg, dtype)
        self.layer_norm2 = nn.LayerNorm(cfg.hidden_size, eps, dtype=dtype)
        self.mlp = MLP(cfg, dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class Encoder(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.layers = nn.ModuleList([EncoderLayer(cfg, dtype) for _ in range(cfg.num_layers)])

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class VisionTower(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.embeddings = PatchEmbeddings(cfg, dtype)
        self.encoder = Encoder(cfg, dtype)
        self.post_layernorm = nn.LayerNorm(cfg.hidden_size, cfg.layer_norm_eps, dtype=dtype)

    def forward(self, pixels: nn.Tensor) -> nn.Tensor:
        return self.post_layernorm(self.encoder(self.embeddings(pixels)))


def encode_image(tower: nn.Module, head: nn.Module, pixels: nn.Tensor, dtype: str) -> nn.Tensor:
    """head(tower(pixels)): pixels are float32 whatever the encoder's dtype; rows come back
    float32."""
    if dtype != "float32":
        pixels = pixels.astype(dtype)
    rows = head(tower(pixels))
    return rows if rows.dtype == "float32" else rows.astype("float32")


def image_export_spec(channels: int, size: int) -> dict:
    """The export spec of an encoder's `embed_image(pixels [channels, size, size])`."""
    return {
        EMBED_IMAGE: {
            PIXELS: spec.Tensor((channels, size, size), "float32"),
            "$": {"param_mode": "packed", "effect_mode": "none"},
        }
    }
