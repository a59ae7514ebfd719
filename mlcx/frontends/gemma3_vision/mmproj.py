"""Gemma 3's encoder from a llama.cpp `mmproj` GGUF (projector type `gemma3`): the config from
its `clip.vision.*` metadata, the image tokens from the text model's tokenizer, the weights
under llama.cpp's names (its converter already stored the projector norm as 1 + w)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from mlcx.errors import ModelSourceError
from mlcx.frontends.gemma3_vision.config import VisionConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint

BOI, EOI, IMAGE = "<start_of_image>", "<end_of_image>", "<image_soft_token>"
DEFAULT_POOL = 4  # llama.cpp's default projector scale factor for gemma3
_LAYER = {
    "layer_norm1": "ln1",
    "layer_norm2": "ln2",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.out_proj": "attn_out",
    "mlp.fc1": "ffn_up",
    "mlp.fc2": "ffn_down",
}
_TOP = {
    "vision_tower.embeddings.patch_embedding": "v.patch_embd",
    "vision_tower.embeddings.position_embedding": "v.position_embd",
    "vision_tower.post_layernorm": "v.post_ln",
    "multi_modal_projector.mm_soft_emb_norm": "mm.soft_emb_norm",
}
_PATCH = "vision_tower.embeddings.patch_embedding.weight"


def _need(ckpt: GGUFCheckpoint, key: str):
    value = ckpt.meta(f"clip.vision.{key}")
    if value is None:
        raise ModelSourceError(f"{ckpt.path}: mmproj metadata clip.vision.{key} is missing")
    return value


def projector_type(ckpt: GGUFCheckpoint) -> str:
    """llama.cpp writes clip.projector_type (newer converters: clip.vision.projector_type)."""
    return str(ckpt.meta("clip.projector_type") or ckpt.meta("clip.vision.projector_type") or "")


def config_from_mmproj(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None]
) -> VisionConfig:
    image, patch = int(_need(ckpt, "image_size")), int(_need(ckpt, "patch_size"))
    pool = int(ckpt.meta("clip.vision.projector.scale_factor") or DEFAULT_POOL)
    ids = {name: token_id(name) for name in (BOI, EOI, IMAGE)}
    missing = [name for name, i in ids.items() if i is None]
    if missing:
        raise ModelSourceError(f"the text model's tokenizer lacks Gemma 3's image tokens {missing}")
    return VisionConfig(
        image_size=image,
        patch_size=patch,
        hidden_size=int(_need(ckpt, "embedding_length")),
        intermediate_size=int(_need(ckpt, "feed_forward_length")),
        num_layers=int(_need(ckpt, "block_count")),
        num_heads=int(_need(ckpt, "attention.head_count")),
        layer_norm_eps=float(ckpt.meta("clip.vision.attention.layer_norm_epsilon") or 1e-6),
        mm_tokens_per_image=(image // patch // pool) ** 2,
        text_hidden_size=text_hidden,
        image_token_id=int(ids[IMAGE]),  # type: ignore[arg-type]
        boi_token_id=int(ids[BOI]),  # type: ignore[arg-type]
        eoi_token_id=int(ids[EOI]),  # type: ignore[arg-type]
    )


def gguf_name(param: str) -> str:
    if param == "multi_modal_projector.mm_input_projection_weight":
        return "mm.input_projection.weight"
    module, leaf = param.rsplit(".", 1)
    if module in _TOP:
        return f"{_TOP[module]}.{leaf}"
    layer, rest = module.removeprefix("vision_tower.encoder.layers.").split(".", 1)
    return f"v.blk.{layer}.{_LAYER[rest]}.{leaf}"


def mmproj_arrays(
    params: list[str], ckpt: GGUFCheckpoint, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    hidden = int(_need(ckpt, "embedding_length"))
    for param in params:
        array = np.asarray(ckpt.get(gguf_name(param)).to_float(), dtype=np.float32)
        if param == _PATCH:  # the convolution's kernel, however the reader shaped it
            array = array.reshape(hidden, -1)
        yield param, np.ascontiguousarray(array.astype(dtype))
