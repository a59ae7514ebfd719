"""`mlcx bench image`: time to encode one image with an artifact's image encoder: the
model's preprocessing (numpy + Pillow) and `embed_image`, medians over fresh images (the
encoder's cache by content hash is bypassed); against llama.cpp's mtmd on the same GGUF and
mmproj files when asked (mlcx.bench.peers.mtmd_peer)."""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import read_encoder
from mlcx.bench.peers.mtmd_peer import MtmdFiles, mtmd_encode
from mlcx.errors import ArtifactError
from mlcx.runtime.backends.encoder_runner import open_encoder_runner
from mlcx.runtime.vision.encoder_inputs import frame_inputs
from mlcx.runtime.vision.preprocess import pixels

PHOTO = (640, 480)  # the size of the images preprocessed (resized to the model's)


@dataclass(frozen=True)
class ImageBench:
    preprocess_s: float
    encode_s: float
    tokens: int  # image tokens per image
    device: str
    peer_s: float | None = None  # llama.cpp mtmd's encode time of the same files

    def lines(self) -> list[str]:
        lines = [
            f"image encoder on {self.device}: {self.tokens} tokens per image",
            f"  preprocess {self.preprocess_s * 1e3:.1f} ms, encode {self.encode_s * 1e3:.1f} ms "
            f"(medians)",
        ]
        if self.peer_s is not None:
            lines.append(
                f"  llama.cpp mtmd encode {self.peer_s * 1e3:.1f} ms (median): mlcx "
                f"{self.peer_s / self.encode_s:.2f}x llama.cpp's speed"
            )
        return lines


@dataclass(frozen=True)
class PeerRun:
    files: MtmdFiles
    threads: int
    build: bool  # build llama.cpp when it is missing


def bench_image(
    artifact_dir: Path, reps: int = 5, peer: PeerRun | None = None, say=print
) -> ImageBench:
    config = read_encoder(artifact_dir)
    if config is None:
        raise ArtifactError(f"{artifact_dir} has no image encoder (a text-only model)")
    runner = open_encoder_runner(artifact_dir, config)
    rng = np.random.default_rng(0)
    warm = frame_inputs(config, pixels(_photo(rng), config.preprocess))
    tokens = len(runner.embed(warm))  # warm-up: the first call loads the kernels
    prep, encode = [], []
    for _ in range(max(reps, 1)):
        image = _photo(rng)
        start = time.perf_counter()
        inputs = frame_inputs(config, pixels(image, config.preprocess))
        middle = time.perf_counter()
        runner.embed(inputs)
        prep.append(middle - start)
        encode.append(time.perf_counter() - middle)
    median = statistics.median
    peer_s = _peer(peer, rng, max(reps, 1), say) if peer is not None else None
    return ImageBench(median(prep), median(encode), tokens, config.device, peer_s)


def _peer(peer: PeerRun, rng: np.random.Generator, reps: int, say) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        image = Path(tmp) / "photo.png"
        _photo(rng).save(image)
        return mtmd_encode(peer.files, image, peer.threads, reps, peer.build, say)


def _photo(rng: np.random.Generator) -> Image.Image:
    width, height = PHOTO
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
