"""The inputs of a Qwen-VL `embed_image`, by name, as the runtime builds them for one image
(mlcx.runtime.vision.qwen_inputs) and the encoder declares them (qwen_vision.model). No TVM
here: the runtime reads these."""

from __future__ import annotations

from mlcx.frontends.qwen_vision.config import VisionConfig

PATCHES = "patches"  # float32 [n, channels x patch x patch], in the encoder's patch order
PATCH_POSITIONS = "patch_positions"  # int32 [n, 2]: each patch's (row, column)
WINDOWS = "windows"  # int32 [n]: each patch's attention window (window attention only)
RESTORE = "restore"  # int32 [tokens]: the merged row of each image token (windows only)
POS_INDEX = "pos_index"  # int32 [n, 4]: rows of the learned position grid (Qwen3-VL)
POS_WEIGHT = "pos_weight"  # float32 [n, 4]: their bilinear weights
TAPS = 4


def input_names(cfg: VisionConfig) -> tuple[str, ...]:
    """embed_image's inputs in order (the weights follow)."""
    names = [PATCHES, PATCH_POSITIONS]
    if cfg.window_size:
        names += [WINDOWS, RESTORE]
    if cfg.position_grid:
        names += [POS_INDEX, POS_WEIGHT]
    return tuple(names)
