"""What llama.cpp's mmproj GGUFs of SigLIP-tower families share (Gemma 3, Idefics3 / SmolVLM):
the tower's `clip.vision.*` keys and its tensor names (`v.*`, as gguf-py's tensor map names
them), read into the fields and params of mlcx's SigLIP tower."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.mmproj_meta import need

DEFAULT_EPS = 1e-6  # clip.cpp's, where a file leaves the layer norm epsilon out
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
    "embeddings.patch_embedding": "v.patch_embd",
    "embeddings.position_embedding": "v.position_embd",
    "post_layernorm": "v.post_ln",
}
_PATCH = "embeddings.patch_embedding.weight"


def tower_fields(ckpt: GGUFCheckpoint) -> dict[str, Any]:
    """The SigLIP tower's config fields (siglip_config.tower_fields' keys) from the mmproj."""
    eps = ckpt.meta("clip.vision.attention.layer_norm_epsilon")
    return {
        "image_size": int(need(ckpt, "image_size")),
        "patch_size": int(need(ckpt, "patch_size")),
        "hidden_size": int(need(ckpt, "embedding_length")),
        "intermediate_size": int(need(ckpt, "feed_forward_length")),
        "num_layers": int(need(ckpt, "block_count")),
        "num_heads": int(need(ckpt, "attention.head_count")),
        "layer_norm_eps": float(DEFAULT_EPS if eps is None else eps),
    }


def tower_name(param: str) -> str:
    """llama.cpp's name of a tower param, given without the tower's own prefix."""
    module, leaf = param.rsplit(".", 1)
    if module in _TOP:
        return f"{_TOP[module]}.{leaf}"
    layer, rest = module.removeprefix("encoder.layers.").split(".", 1)
    return f"v.blk.{layer}.{_LAYER[rest]}.{leaf}"


def mmproj_arrays(
    params: list[str], ckpt: GGUFCheckpoint, dtype: str, name: Callable[[str], str]
) -> Iterator[tuple[str, np.ndarray]]:
    """The params' arrays from the file, `name` giving each one's llama.cpp name."""
    hidden = int(need(ckpt, "embedding_length"))
    for param in params:
        array = np.asarray(ckpt.get(name(param)).to_float(), dtype=np.float32)
        if param.endswith(_PATCH):  # the convolution's kernel, however the reader shaped it
            array = array.reshape(hidden, -1)
        yield param, np.ascontiguousarray(array.astype(dtype))
