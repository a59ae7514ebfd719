"""M-RoPE positions of a step's new tokens (models with DecoderConfig.mrope_sections), as
transformers' get_rope_index makes them: a text token's time, height and width positions are
all its index plus the shift of the images before it; an image's tokens are at its start
(after that shift) plus their row and column in its grid of merged tokens; after an image the
index continues at its start plus the longer side of its grid, not its token count.

Positions are a function of the sequence's prompt (its images' places and grids), so a cached
prefix with the same images at the same places has the same keys; the KV cache manager and
its page tables stay one-dimensional. web/src/rope_positions.js computes the same in the
browser (held equal by web/test/vectors/qwen_vl.json)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mlcx.runtime.core.images import PromptImage
from mlcx.runtime.core.scheduler_output import SchedulerOutput
from mlcx.runtime.core.sequence import Sequence as Seq


def token_positions(first: int, count: int, images: Sequence[PromptImage]) -> np.ndarray:
    """int32 [3, count]: positions first .. first + count - 1 of a sequence with `images`."""
    index = np.arange(first, first + count, dtype=np.int64)
    out = np.tile(index, (3, 1))
    shift = 0
    for image in sorted(images, key=lambda im: im.start):
        if image.grid is None:
            continue
        rows, cols = image.grid
        inside = (index >= image.start) & (index < image.end)
        local, base = index[inside] - image.start, image.start + shift
        out[0, inside], out[1, inside], out[2, inside] = (
            base,
            base + local // cols,
            base + local % cols,
        )
        step = max(rows, cols) - (image.end - image.start)
        out[:, index >= image.end] += step
        shift += step
    return out.astype(np.int32)


def step_positions(
    plan: SchedulerOutput, images_of: Callable[[Seq], Sequence[PromptImage]]
) -> np.ndarray:
    """int32 [3, new tokens] of a scheduled step, in its rows' order."""
    parts = [
        token_positions(item.seq.num_computed, item.num_new, images_of(item.seq))
        for item in plan.scheduled
    ]
    return np.concatenate(parts, axis=1)
