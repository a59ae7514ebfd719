"""Images -> embedding rows, each image encoded once: rows are kept by the sha256 of the
image's pixels (an LRU of `capacity` images), so the same image in the next turn is not
encoded again."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import EncoderConfig, read_encoder
from mlcx.runtime.backends.encoder_runner import open_encoder_runner
from mlcx.runtime.vision.encoder_inputs import frame_inputs
from mlcx.runtime.vision.preprocess import frames


@dataclass(frozen=True)
class EncodedImage:
    digest: bytes  # sha256 of the preprocessed pixels: what the prefix cache keys on
    rows: np.ndarray  # float32 [the frames' tokens, hidden], frame by frame


class ImageEncoder:
    def __init__(self, artifact_dir, config: EncoderConfig, capacity: int = 16):
        self.config = config
        self.runner = open_encoder_runner(artifact_dir, config)
        self.capacity = capacity
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.encoded = 0  # images run through the encoder (cache misses)

    @classmethod
    def for_artifact(cls, artifact_dir) -> ImageEncoder | None:
        config = read_encoder(artifact_dir)
        return cls(artifact_dir, config) if config is not None else None

    def encode(self, image: Image.Image) -> EncodedImage:
        """The rows of every frame of the image (one, or tiles then the global image)."""
        pixels = frames(image, self.config.preprocess)
        sized = self.config.preprocess.dynamic  # equal bytes may be frames of other sizes
        parts = [(str(px.shape).encode() if sized else b"") + px.tobytes() for px in pixels]
        digest = hashlib.sha256(b"".join(parts)).digest()
        rows = self._cache.get(digest)
        if rows is None:
            rows = np.concatenate(
                [self.runner.embed(frame_inputs(self.config, px)) for px in pixels]
            )
            self.encoded += 1
            self._cache[digest] = rows
            if len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        self._cache.move_to_end(digest)
        return EncodedImage(digest, rows)
