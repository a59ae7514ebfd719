"""An artifact's image encoder: `vision/encoder.json`, beside its library and weights.

Layout (inside the artifact directory):
    vision/encoder.json      this file's EncoderConfig
    vision/<library>         the compiled `embed_image` (pixels [3, S, S], or the `inputs` of a
                             dynamic-resolution encoder -> rows [n, hidden])
    vision/params/           its weights (artifact.weight_shards)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mlcx.errors import ArtifactError
from mlcx.kernels.step_params import PIXELS

VISION_DIR = "vision"
ENCODER_FILE = "encoder.json"


@dataclass(frozen=True)
class Preprocess:
    """How an image becomes pixels: the model's own preprocessor_config.json, validated."""

    size: int
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    rescale: float = 1 / 255
    resample: int = 2  # PIL's filter number (2: bilinear), as the HF processors record it
    # first resize the longest edge to this, keeping the aspect ratio (Idefics3); 0: no
    longest_edge: int = 0
    split: bool = False  # Idefics3's image splitting: tiles of `size`, then the global image
    # dynamic resolution (Qwen-VL): resized to whole multiples of `size` pixels a side, with
    # min_pixels .. max_pixels in all (transformers' smart_resize); 0: a fixed square of `size`
    min_pixels: int = 0
    max_pixels: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", tuple(float(v) for v in self.mean))
        object.__setattr__(self, "std", tuple(float(v) for v in self.std))
        if self.size < 1 or len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"image preprocessing: bad size/mean/std {self}")
        if self.resample not in range(6):
            raise ValueError(f"image preprocessing: resample {self.resample} is not a filter")
        if self.max_pixels and not 0 < self.min_pixels <= self.max_pixels:
            raise ValueError(f"image preprocessing: bad min/max pixels {self}")

    @property
    def dynamic(self) -> bool:
        """Each image keeps its own size (within the pixel bounds) and token count."""
        return self.max_pixels > 0


@dataclass(frozen=True)
class EncoderConfig:
    family: str  # frontends.encoders.ENCODERS
    config: dict[str, Any]  # the family's own config (image tokens, sizes)
    library: str
    preprocess: Preprocess
    device: str  # the target `library` was built for (runtime.backends.encoder_runner)
    image_token_id: int
    tokens_per_image: int  # 0: each image has its own (dynamic resolution)
    bidirectional: bool  # a prompt's image tokens see their whole image (Gemma 3)
    # what the chat template writes for an image, and the prompt text that replaces it
    image_marker: str = ""
    image_text: str = ""
    dtype: str = "float32"  # the encoder's math (weights); pixels and rows are float32
    # embed_image's inputs before the weights (runtime.vision.encoder_inputs builds them)
    inputs: tuple[str, ...] = (PIXELS,)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> EncoderConfig:
        data = json.loads(text)
        data["preprocess"] = Preprocess(**data["preprocess"])
        data["inputs"] = tuple(data.get("inputs", (PIXELS,)))
        return cls(**data)


def encoder_dir(artifact_dir: Path) -> Path:
    return Path(artifact_dir) / VISION_DIR


def read_encoder(artifact_dir: Path) -> EncoderConfig | None:
    """The artifact's image encoder, or None where it was compiled without one."""
    path = encoder_dir(artifact_dir) / ENCODER_FILE
    if not path.exists():
        return None
    try:
        return EncoderConfig.from_json(path.read_text())
    except (ValueError, TypeError, KeyError) as err:
        raise ArtifactError(f"{path} is not a valid encoder config ({err}); recompile") from None
