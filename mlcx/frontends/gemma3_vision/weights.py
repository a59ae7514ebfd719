"""Where the encoder's weights live in a Gemma3ForConditionalGeneration checkpoint.

The module attributes carry Hugging Face's names under `vision_tower.` (hub checkpoints add
`vision_model.`) and `multi_modal_projector.`; two tensors change shape or value: the patch
convolution's kernel becomes a matrix over flattened patches, and the projector's RMSNorm
weight w becomes 1 + w (Gemma's norm scales by 1 + w)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from mlcx.errors import ModelSourceError
from mlcx.frontends.tensors import TensorSource

_TOWER = "vision_tower."
_TOWER_PREFIXES = ("vision_tower.vision_model.", "vision_tower.", "model.vision_tower.")
_PROJECTOR_PREFIXES = ("multi_modal_projector.", "model.multi_modal_projector.")

_TRANSFORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "vision_tower.embeddings.patch_embedding.weight": lambda w: w.reshape(w.shape[0], -1),
    "multi_modal_projector.mm_soft_emb_norm.weight": lambda w: w + np.asarray(1, w.dtype),
}


def _prefix(names: set[str], probe: str, prefixes: tuple[str, ...]) -> str:
    for prefix in prefixes:
        if prefix + probe in names:
            return prefix
    raise ModelSourceError(f"the checkpoint has no image encoder tensor named like *{probe}")


def source_name(param: str, names: set[str]) -> str:
    """The checkpoint tensor of an encoder parameter."""
    if param.startswith(_TOWER):
        rest = param[len(_TOWER) :]
        return _prefix(names, "post_layernorm.weight", _TOWER_PREFIXES) + rest
    rest = param.split(".", 1)[1]
    return _prefix(names, "mm_input_projection_weight", _PROJECTOR_PREFIXES) + rest


def encoder_arrays(
    params: list[str], tensors: TensorSource, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    """(parameter, array) of each encoder parameter, in the exporter's order."""
    names = set(tensors.names())
    for param in params:
        array = tensors.get(source_name(param, names)).to_float()
        array = _TRANSFORMS.get(param, lambda a: a)(np.asarray(array, dtype=np.float32))
        yield param, np.ascontiguousarray(array.astype(dtype))
