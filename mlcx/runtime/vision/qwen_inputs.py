"""One preprocessed image [3, H, W] -> the inputs of a Qwen-VL `embed_image`
(frontends.qwen_vision.inputs), as transformers computes them from the image's grid:

- patches in merge order (each 2x2 group of patches adjacent, groups row-major: the
  processor's patchify), each flattened (channel, y, x); a still image's two temporal copies
  are folded into the weights instead;
- each patch's (row, column) for the 2-D RoPE;
- window attention (Qwen2.5-VL, vision_utils.get_vision_window_index): the merged tokens
  regrouped window by window (windows of window_tokens^2 tokens, row-major, the last ones cut
  by the image's edge), each patch's window id, and each image token's row among the merged
  rows (`restore`, the inverse order);
- the learned position grid (Qwen3-VL): for each patch the 4 grid rows and bilinear weights
  (align_corners) that resample the grid to the image's patches, in float32 as torch does.
web/src/qwen_inputs.js computes the same arrays; shared vectors hold the two equal."""

from __future__ import annotations

import numpy as np

from mlcx.frontends.qwen_vision import inputs as names
from mlcx.frontends.qwen_vision.config import VisionConfig

F32 = np.float32


def _merge_order(rows: int, cols: int, merge: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of each patch in merge order."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    shape = (rows // merge, merge, cols // merge, merge)
    return (
        r.reshape(shape).transpose(0, 2, 1, 3).reshape(-1),
        c.reshape(shape).transpose(0, 2, 1, 3).reshape(-1),
    )


def patchify(frame: np.ndarray, patch: int, merge: int) -> np.ndarray:
    """[3, H, W] -> [patches, 3 * patch * patch] in merge order."""
    c, h, w = frame.shape
    rows, cols = h // patch, w // patch
    grid = frame.reshape(c, rows // merge, merge, patch, cols // merge, merge, patch)
    grid = grid.transpose(1, 4, 2, 5, 0, 3, 6)
    return np.ascontiguousarray(grid.reshape(rows * cols, c * patch * patch), dtype=F32)


def window_order(rows: int, cols: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    """(the merged tokens window by window, the window of each) for a rows x cols grid of
    merged tokens and windows of side x side tokens."""
    index = np.arange(rows * cols).reshape(rows, cols)
    order, window = [], []
    for top in range(0, rows, side):
        for left in range(0, cols, side):
            tokens = index[top : top + side, left : left + side].reshape(-1)
            order.append(tokens)
            window.append(np.full(len(tokens), len(window)))
    return np.concatenate(order), np.concatenate(window)


def _axis_taps(index: np.ndarray, size: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    """Bilinear taps (floor, floor + 1 clamped) and weights along one axis, align_corners."""
    src = index.astype(F32) * F32(side - 1) / F32(max(size - 1, 1))
    floor = np.floor(src)
    taps = floor.astype(np.int64)[:, None] + np.arange(2)
    weights = np.maximum(
        F32(1) - np.abs(src[:, None] - floor[:, None] - np.arange(2, dtype=F32)), 0
    )
    return np.clip(taps, 0, side - 1), weights.astype(F32)


def grid_taps(
    rows: np.ndarray, cols: np.ndarray, grid: tuple[int, int], side: int
) -> tuple[np.ndarray, np.ndarray]:
    """[patches, 4] rows of a side x side table and their weights for patches at (rows, cols)
    of an image grid of `grid` patches."""
    h_taps, h_weights = _axis_taps(rows, grid[0], side)
    w_taps, w_weights = _axis_taps(cols, grid[1], side)
    index = (h_taps[:, :, None] * side + w_taps[:, None, :]).reshape(-1, 4)
    weight = (h_weights[:, :, None] * w_weights[:, None, :]).reshape(-1, 4)
    return index.astype(np.int32), weight.astype(F32)


def qwen_inputs(frame: np.ndarray, cfg: VisionConfig) -> dict[str, np.ndarray]:
    """The named inputs of embed_image for one image, in cfg's input order."""
    p, m = cfg.patch_size, cfg.merge_size
    rows, cols = frame.shape[1] // p, frame.shape[2] // p
    patches = patchify(frame, p, m)
    r, c = _merge_order(rows, cols, m)
    out = {names.PATCH_POSITIONS: np.stack([r, c], axis=1).astype(np.int32)}
    if cfg.position_grid:
        index, weight = grid_taps(r, c, (rows, cols), cfg.position_grid)
        out[names.POS_INDEX], out[names.POS_WEIGHT] = index, weight
    if cfg.window_size:
        order, window = window_order(rows // m, cols // m, cfg.window_tokens)
        group = m * m
        patch_order = (order[:, None] * group + np.arange(group)).reshape(-1)
        patches = patches[patch_order]
        out = {k: v[patch_order] for k, v in out.items()}
        out[names.WINDOWS] = np.repeat(window, group).astype(np.int32)
        out[names.RESTORE] = np.argsort(order).astype(np.int32)
    out[names.PATCHES] = np.ascontiguousarray(patches)
    return {name: np.ascontiguousarray(out[name]) for name in names.input_names(cfg)}
