"""Qwen2.5-VL's encoder from a llama.cpp `mmproj` GGUF (projector type `qwen2.5vl_merger`, what
convert_hf_to_gguf.py --mmproj writes for Qwen2_5_VLForConditionalGeneration).

The converter splits what mlcx keeps fused, so it is joined back here: q, k and v
(`v.blk.N.attn_{q,k,v}`) into qkv, and the two frames of the patch convolution
(`v.patch_embd.weight`, `.weight.1`) summed as for a still image (weights.fold_frames). It
keeps no window size (llama.cpp attends in 112-pixel windows) and writes the full-attention
layers as a period, `clip.vision.n_wa_pattern`. Images are resized as llama.cpp does for this
projector: bicubic, 8 to 4096 merged tokens unless the file says otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.mmproj_meta import image_tokens, need
from mlcx.frontends.qwen_vision.config import VisionConfig

PAD = "<|image_pad|>"
WINDOW = 112  # llama.cpp's attention window (pixels a side) where the file has none
DEFAULT_MERGE = 2
TOKENS = (8, 4096)  # llama.cpp's merged-token bounds of an image for Qwen2.5-VL
BICUBIC = 3
_TOP = {
    "visual.merger.ln_q.weight": "v.post_ln.weight",
    "visual.merger.mlp.0.weight": "mm.0.weight",
    "visual.merger.mlp.0.bias": "mm.0.bias",
    "visual.merger.mlp.2.weight": "mm.2.weight",
    "visual.merger.mlp.2.bias": "mm.2.bias",
}
_BLOCK = {
    "norm1": "ln1",
    "norm2": "ln2",
    "attn.proj": "attn_out",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
PATCH = "visual.patch_embed.proj.weight"


def config_from_mmproj(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None]
) -> VisionConfig:
    layers, period = int(need(ckpt, "block_count")), int(need(ckpt, "n_wa_pattern"))
    return VisionConfig(
        patch_size=int(need(ckpt, "patch_size")),
        temporal_patch_size=2,  # the converter only takes two frames
        merge_size=int(ckpt.meta("clip.vision.spatial_merge_size") or DEFAULT_MERGE),
        hidden_size=int(need(ckpt, "embedding_length")),
        intermediate_size=int(need(ckpt, "feed_forward_length")),
        num_layers=layers,
        num_heads=int(need(ckpt, "attention.head_count")),
        text_hidden_size=text_hidden,
        image_token_id=image_tokens(token_id, (PAD,), "Qwen2.5-VL")[PAD],
        window_size=int(ckpt.meta("clip.vision.window_size") or WINDOW),
        full_layers=tuple(i for i in range(layers) if (i + 1) % period == 0),
    )


def preprocess(ckpt: GGUFCheckpoint, cfg: VisionConfig) -> dict[str, Any]:
    area = cfg.factor**2
    low = ckpt.meta("clip.vision.image_min_pixels") or TOKENS[0] * area
    high = ckpt.meta("clip.vision.image_max_pixels") or TOKENS[1] * area
    return {"size": cfg.factor, "resample": BICUBIC, "min_pixels": low, "max_pixels": high}


def _read(ckpt: GGUFCheckpoint, name: str) -> np.ndarray:
    return np.asarray(ckpt.get(name).to_float(), dtype=np.float32)


def _array(ckpt: GGUFCheckpoint, param: str, hidden: int) -> np.ndarray:
    if param == PATCH:
        frames = _read(ckpt, "v.patch_embd.weight") + _read(ckpt, "v.patch_embd.weight.1")
        return frames.reshape(hidden, -1)
    if param in _TOP:
        return _read(ckpt, _TOP[param])
    layer, module, leaf = _split(param)
    if module == "attn.qkv":
        return np.concatenate([_read(ckpt, f"v.blk.{layer}.attn_{x}.{leaf}") for x in "qkv"])
    return _read(ckpt, f"v.blk.{layer}.{_BLOCK[module]}.{leaf}")


def _split(param: str) -> tuple[str, str, str]:
    """visual.blocks.N.<module>.<leaf> -> (N, module, leaf)."""
    rest, leaf = param.removeprefix("visual.blocks.").rsplit(".", 1)
    layer, module = rest.split(".", 1)
    return layer, module, leaf


def mmproj_arrays(
    params: list[str], ckpt: GGUFCheckpoint, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    hidden = int(need(ckpt, "embedding_length"))
    for param in params:
        yield param, np.ascontiguousarray(_array(ckpt, param, hidden).astype(dtype))
