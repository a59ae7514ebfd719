"""`mlcx bench image`: time to encode one image with an artifact's image encoder: the
model's preprocessing (numpy + Pillow) and `embed_image`, medians over fresh images (the
encoder's cache by content hash is bypassed)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import read_encoder
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.encoder_runner import open_encoder_runner
from mlcx.runtime.vision.preprocess import pixels

PHOTO = (640, 480)  # the size of the images preprocessed (resized to the model's)


@dataclass(frozen=True)
class ImageBench:
    preprocess_s: float
    encode_s: float
    tokens: int  # image tokens per image
    device: str

    def lines(self) -> list[str]:
        return [
            f"image encoder on {self.device}: {self.tokens} tokens per image",
            f"  preprocess {self.preprocess_s * 1e3:.1f} ms, encode {self.encode_s * 1e3:.1f} ms "
            f"(medians)",
        ]


def bench_image(artifact_dir: Path, reps: int = 5) -> ImageBench:
    config = read_encoder(artifact_dir)
    if config is None:
        raise ArtifactError(f"{artifact_dir} has no image encoder (a text-only model)")
    runner = open_encoder_runner(artifact_dir, config)
    rng = np.random.default_rng(0)
    runner.embed(pixels(_photo(rng), config.preprocess))  # warm-up: first call loads kernels
    prep, encode = [], []
    for _ in range(max(reps, 1)):
        image = _photo(rng)
        start = time.perf_counter()
        px = pixels(image, config.preprocess)
        middle = time.perf_counter()
        runner.embed(px)
        prep.append(middle - start)
        encode.append(time.perf_counter() - middle)
    median = statistics.median
    return ImageBench(median(prep), median(encode), config.tokens_per_image, config.device)


def _photo(rng: np.random.Generator) -> Image.Image:
    width, height = PHOTO
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
