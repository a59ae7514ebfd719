"""The Qwen-VL encoders from llama.cpp `mmproj` GGUFs, as convert_hf_to_gguf.py --mmproj writes
them: projector type `qwen2.5vl_merger` (Qwen2_5_VLForConditionalGeneration) and
`qwen3vl_merger` (Qwen3VLForConditionalGeneration).

The converter splits what mlcx keeps fused, so it is joined back here: Qwen2.5-VL's q, k and v
(`v.blk.N.attn_{q,k,v}`) into qkv, and both towers' two frames of the patch convolution
(`v.patch_embd.weight`, `.weight.1`) summed as for a still image (weights.fold_frames).
Qwen2.5-VL's file keeps no window size (llama.cpp attends in 112-pixel windows) and writes the
full-attention layers as a period, `clip.vision.n_wa_pattern`; Qwen3-VL's deepstack layers are
`clip.vision.is_deepstack_layers`, its position grid image_size / patch_size a side. Images are
resized as llama.cpp does for both: bicubic, 8 to 4096 merged tokens unless the file says
otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.mmproj_meta import image_tokens, need
from mlcx.frontends.qwen_vision.config import VisionConfig

PAD = "<|image_pad|>"
WINDOW = 112  # llama.cpp's Qwen2.5-VL attention window (pixels a side) where the file has none
DEFAULT_MERGE = 2
TOKENS = (8, 4096)  # llama.cpp's merged-token bounds of a Qwen-VL image
BICUBIC = 3
PATCH = "visual.patch_embed.proj.weight"
_TOP = {
    "visual.patch_embed.proj.bias": "v.patch_embd.bias",
    "visual.pos_embed.weight": "v.position_embd.weight",
    "visual.merger.ln_q.weight": "v.post_ln.weight",  # Qwen2.5-VL
    "visual.merger.mlp.0.weight": "mm.0.weight",
    "visual.merger.mlp.0.bias": "mm.0.bias",
    "visual.merger.mlp.2.weight": "mm.2.weight",
    "visual.merger.mlp.2.bias": "mm.2.bias",
    "visual.merger.norm.weight": "v.post_ln.weight",  # Qwen3-VL
    "visual.merger.norm.bias": "v.post_ln.bias",
    "visual.merger.linear_fc1.weight": "mm.0.weight",
    "visual.merger.linear_fc1.bias": "mm.0.bias",
    "visual.merger.linear_fc2.weight": "mm.2.weight",
    "visual.merger.linear_fc2.bias": "mm.2.bias",
}
_BLOCK = {
    "norm1": "ln1",
    "norm2": "ln2",
    "attn.proj": "attn_out",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "mlp.linear_fc1": "ffn_up",
    "mlp.linear_fc2": "ffn_down",
}
_DEEPSTACK = {"norm": "norm", "linear_fc1": "fc1", "linear_fc2": "fc2"}


def _common(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None], family: str
) -> dict[str, Any]:
    return {
        "patch_size": int(need(ckpt, "patch_size")),
        "temporal_patch_size": 2,  # the converter only takes two frames
        "merge_size": int(ckpt.meta("clip.vision.spatial_merge_size") or DEFAULT_MERGE),
        "hidden_size": int(need(ckpt, "embedding_length")),
        "intermediate_size": int(need(ckpt, "feed_forward_length")),
        "num_layers": int(need(ckpt, "block_count")),
        "num_heads": int(need(ckpt, "attention.head_count")),
        "text_hidden_size": text_hidden,
        "image_token_id": image_tokens(token_id, (PAD,), family)[PAD],
    }


def config_qwen2_5(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None]
) -> VisionConfig:
    common = _common(ckpt, text_hidden, token_id, "Qwen2.5-VL")
    period = int(need(ckpt, "n_wa_pattern"))
    return VisionConfig(
        **common,
        window_size=int(ckpt.meta("clip.vision.window_size") or WINDOW),
        full_layers=tuple(i for i in range(common["num_layers"]) if (i + 1) % period == 0),
    )


def config_qwen3(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None]
) -> VisionConfig:
    common = _common(ckpt, text_hidden, token_id, "Qwen3-VL")
    return VisionConfig(
        **common,
        norm="layer",
        mlp="gelu",
        act="gelu_tanh",
        position_grid=int(need(ckpt, "image_size")) // common["patch_size"],
        patch_bias=True,
        deepstack_layers=_deepstack_layers(ckpt),
    )


def _deepstack_layers(ckpt: GGUFCheckpoint) -> tuple[int, ...]:
    flags = ckpt.meta("clip.vision.is_deepstack_layers") or ()
    return tuple(i for i, flag in enumerate(flags) if flag)


def preprocess(ckpt: GGUFCheckpoint, cfg: VisionConfig) -> dict[str, Any]:
    area = cfg.factor**2
    low = ckpt.meta("clip.vision.image_min_pixels") or TOKENS[0] * area
    high = ckpt.meta("clip.vision.image_max_pixels") or TOKENS[1] * area
    return {"size": cfg.factor, "resample": BICUBIC, "min_pixels": low, "max_pixels": high}


def _read(ckpt: GGUFCheckpoint, name: str) -> np.ndarray:
    return np.asarray(ckpt.get(name).to_float(), dtype=np.float32)


def _block(ckpt: GGUFCheckpoint, param: str) -> np.ndarray:
    rest, leaf = param.removeprefix("visual.blocks.").rsplit(".", 1)
    layer, module = rest.split(".", 1)
    if module == "attn.qkv" and f"v.blk.{layer}.attn_qkv.{leaf}" not in ckpt.names():
        return np.concatenate([_read(ckpt, f"v.blk.{layer}.attn_{x}.{leaf}") for x in "qkv"])
    name = "attn_qkv" if module == "attn.qkv" else _BLOCK[module]
    return _read(ckpt, f"v.blk.{layer}.{name}.{leaf}")


def _deepstack(ckpt: GGUFCheckpoint, param: str) -> np.ndarray:
    """deepstack_merger_list.K is stored under the layer it reads, the K-th deepstack layer."""
    index, module, leaf = param.removeprefix("visual.deepstack_merger_list.").split(".")
    layer = _deepstack_layers(ckpt)[int(index)]
    return _read(ckpt, f"v.deepstack.{layer}.{_DEEPSTACK[module]}.{leaf}")


def _array(ckpt: GGUFCheckpoint, param: str, hidden: int) -> np.ndarray:
    if param == PATCH:
        frames = _read(ckpt, "v.patch_embd.weight") + _read(ckpt, "v.patch_embd.weight.1")
        return frames.reshape(hidden, -1)
    if param in _TOP:
        return _read(ckpt, _TOP[param])
    if param.startswith("visual.deepstack_merger_list."):
        return _deepstack(ckpt, param)
    return _block(ckpt, param)


def mmproj_arrays(
    params: list[str], ckpt: GGUFCheckpoint, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    hidden = int(need(ckpt, "embedding_length"))
    for param in params:
        yield param, np.ascontiguousarray(_array(ckpt, param, hidden).astype(dtype))
