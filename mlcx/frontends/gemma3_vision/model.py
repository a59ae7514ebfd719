"""SigLIP's vision tower (frontends.nn.siglip) and Gemma 3's multimodal projector as one
function, `embed_image`: pixels [3, S, S] (already resized, rescaled and normalized) -> rows
[mm_tokens, text_hidden] that replace the image tokens' embeddings in prefill. Module
attributes carry Hugging Face's names, so the weight mapping is a prefix swap."""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.gemma3_vision.config import VisionConfig
from mlcx.frontends.nn.siglip import VisionTower, encode_image, image_export_spec


class Projector(nn.Module):
    """Average pooling of the patch grid to mm_tokens_per_image, Gemma's RMSNorm (its 1 + w
    stored by the weight mapping), then the projection to the text model's width."""

    def __init__(self, cfg: VisionConfig, dtype: str):
        self.cfg = cfg
        self.mm_soft_emb_norm = nn.RMSNorm(
            cfg.hidden_size, -1, cfg.layer_norm_eps, bias=False, dtype=dtype
        )
        self.mm_input_projection_weight = nn.Parameter(
            (cfg.hidden_size, cfg.text_hidden_size), dtype
        )

    def forward(self, patches: nn.Tensor) -> nn.Tensor:
        cfg = self.cfg
        t, k, c = cfg.tokens_per_side, cfg.pool, cfg.hidden_size
        # the pooled window last, so that the sum is a row reduction (GPU rules schedule it)
        grid = op.permute_dims(op.reshape(patches, (t, k, t, k, c)), [0, 2, 4, 1, 3])
        pooled = op.sum(op.reshape(grid, (t * t, c, k * k)), axis=-1) * (1.0 / (k * k))
        normed = self.mm_soft_emb_norm(pooled)
        return op.matmul(normed, self.mm_input_projection_weight)


class ImageEncoder(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str = "float32"):
        self.cfg = cfg
        self.vision_tower = VisionTower(cfg, dtype)
        self.multi_modal_projector = Projector(cfg, dtype)
        self.dtype = dtype

    def embed_image(self, pixels: nn.Tensor) -> nn.Tensor:
        return encode_image(self.vision_tower, self.multi_modal_projector, pixels, self.dtype)

    def export_spec(self) -> dict:
        return image_export_spec(self.cfg.num_channels, self.cfg.image_size)
