"""SigLIP's vision tower (frontends.nn.siglip) and Idefics3's connector as `embed_image`:
pixels [3, S, S] -> rows [(S / patch / scale)^2, text_hidden]. The connector's pixel shuffle
folds each scale x scale block of patches into one token (features in the block's row-major
order), then projects it without bias."""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.idefics3_vision.config import VisionConfig
from mlcx.frontends.nn.siglip import VisionTower, encode_image, image_export_spec


class Projection(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        features = cfg.hidden_size * cfg.scale_factor**2
        self.proj = nn.Linear(features, cfg.text_hidden_size, bias=False, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.proj(x)


class Connector(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.cfg = cfg
        self.modality_projection = Projection(cfg, dtype)

    def forward(self, patches: nn.Tensor) -> nn.Tensor:
        cfg = self.cfg
        s, side, d = cfg.scale_factor, cfg.patches_per_side // cfg.scale_factor, cfg.hidden_size
        blocks = op.permute_dims(op.reshape(patches, (side, s, side, s, d)), [0, 2, 1, 3, 4])
        return self.modality_projection(op.reshape(blocks, (side * side, s * s * d)))


class ImageEncoder(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str = "float32"):
        self.cfg = cfg
        self.dtype = dtype
        self.vision_model = VisionTower(cfg, dtype)
        self.connector = Connector(cfg, dtype)

    def embed_image(self, pixels: nn.Tensor) -> nn.Tensor:
        return encode_image(self.vision_model, self.connector, pixels, self.dtype)

    def export_spec(self) -> dict:
        return image_export_spec(self.cfg.num_channels, self.cfg.image_size)
