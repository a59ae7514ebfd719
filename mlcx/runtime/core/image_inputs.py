"""What the engine does with a request's images: checks them against the prompt's image
tokens, encodes them (runtime.vision.encoder, once per content hash) and hands each step its
image spans and embedding rows (core/images.py says why)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import EncoderConfig
from mlcx.errors import ImageError
from mlcx.runtime.core.images import PromptImage, image_runs, step_images
from mlcx.runtime.core.scheduler_output import SchedulerOutput
from mlcx.runtime.vision.encoder import ImageEncoder
from mlcx.runtime.vision.layout import image_layout


@dataclass(frozen=True)
class StepImages:
    spans: dict[int, list[tuple[int, int]]]  # seq_id -> image spans its new tokens touch
    rows: np.ndarray  # int32 [tokens]: each new token's row of embeds, -1: its own embedding
    embeds: np.ndarray  # float32 [image tokens, hidden]
    logit_rows: np.ndarray  # each item's last new token (rows are split per image token)


class ImageInputs:
    def __init__(self, encoder: ImageEncoder | None, step_budget: int):
        self.encoder = encoder
        self.step_budget = step_budget

    @property
    def config(self) -> EncoderConfig | None:
        return self.encoder.config if self.encoder is not None else None

    def check(self, prompt_ids: Sequence[int], images: Sequence[Image.Image]) -> None:
        """Raise ImageError unless the prompt holds a whole run of image tokens for each frame
        of each image (one frame, or Idefics3's tiles and global image), as many as it has."""
        if not images:
            return
        if self.encoder is None:
            raise ImageError(
                "this model takes text only (it was compiled without an image encoder)"
            )
        cfg = self.encoder.config
        found = [e - s for s, e in image_runs(prompt_ids, cfg.image_token_id)]
        wanted = [n for image in images for n in image_layout(cfg, image).runs]
        if found != wanted:
            raise ImageError(
                f"{len(images)} image(s) need runs of {_counts(wanted)} image tokens in the "
                f"prompt, which has {_counts(found) or 'none'}"
            )
        if max(wanted) > self.step_budget:
            raise ImageError(
                f"an image's {max(wanted)} tokens exceed a step's {self.step_budget}; "
                "recompile with a larger --prefill-chunk (or give a smaller image)"
            )

    def encode(
        self, prompt_ids: Sequence[int], images: Sequence[Image.Image]
    ) -> tuple[PromptImage, ...]:
        if not images or self.encoder is None:
            return ()
        cfg = self.encoder.config
        runs = iter(image_runs(prompt_ids, cfg.image_token_id))
        out = []
        for image in images:  # a run for each frame (tile or global image)
            encoded, layout = self.encoder.encode(image), image_layout(cfg, image)
            first = 0
            for k, n in enumerate(layout.runs):
                start, _ = next(runs)
                rows = encoded.rows[first : first + n]
                digest = hashlib.sha256(encoded.digest + bytes([k])).digest()
                out.append(PromptImage(start, rows, digest, layout.grid))
                first += n
        return tuple(out)

    def step(self, plan: SchedulerOutput, images_of) -> StepImages | None:
        """The image inputs of a scheduled step, or None where it computes no image token.
        `images_of(seq)`: the images of the sequence's request."""
        spans: dict[int, list[tuple[int, int]]] = {}
        pieces, row0, total = [], 0, sum(item.num_new for item in plan.scheduled)
        for item in plan.scheduled:
            found, rows = step_images(
                images_of(item.seq), item.seq.num_computed, item.num_new, row0
            )
            if found:
                spans[item.seq.seq_id] = found
                pieces += rows
            row0 += item.num_new
        if not pieces:
            return None
        if not (self.config and self.config.bidirectional):
            spans = {}  # image tokens attend causally, as text does
        index = np.full(total, -1, dtype=np.int32)
        offset = 0
        for row, block in pieces:
            index[row : row + len(block)] = np.arange(offset, offset + len(block))
            offset += len(block)
        embeds = np.concatenate([block for _, block in pieces]).astype(np.float32)
        explicit = plan.logit_rows()
        ends = np.cumsum([item.num_new for item in plan.scheduled]) - 1
        logit_rows = explicit if explicit is not None else ends.astype(np.int32)
        return StepImages(spans, index, embeds, logit_rows)


def _counts(runs: list[int]) -> str:
    return ", ".join(str(n) for n in runs)
