"""A tiny Gemma3ForConditionalGeneration written as llama.cpp would convert it: the text model
as a `gemma3` GGUF (tests.support.tiny_gguf) and the vision tower + projector as an `mmproj`
GGUF (projector type gemma3, llama.cpp's tensor names and clip.vision.* keys, the projector
norm stored as 1 + w, as its converter does)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from mlcx.bench.workloads.random_models import finish_gguf
from mlcx.bench.workloads.random_vision import SiglipShape, mmproj_writer
from tests.support.tiny_gguf import write_tiny_gguf

F32 = {}  # every tensor f32: the comparisons are at 1e-4
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


def text_folder(model, folder: Path, out: Path) -> Path:
    """The VL model's text part as a Gemma3ForCausalLM folder (with its tokenizer)."""
    from transformers import Gemma3ForCausalLM

    text = Gemma3ForCausalLM(model.config.text_config)
    text.model.load_state_dict(model.model.language_model.state_dict())
    text.lm_head.load_state_dict(model.lm_head.state_dict())
    text.eval().save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, out / name)
    return out


def _name(hf: str) -> str:
    module, leaf = hf.rsplit(".", 1)
    if module in _TOP:
        return f"{_TOP[module]}.{leaf}"
    layer, rest = module.removeprefix("encoder.layers.").split(".", 1)
    return f"v.blk.{layer}.{_LAYER[rest]}.{leaf}"


def write_mmproj(model, out: Path, pool: int) -> Path:
    cfg = model.config.vision_config
    shape = SiglipShape(
        cfg.image_size,
        cfg.patch_size,
        cfg.hidden_size,
        cfg.intermediate_size,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        pool,
    )
    text_hidden = model.config.text_config.hidden_size
    writer = mmproj_writer(shape, text_hidden, out, cfg.layer_norm_eps)
    for name, tensor in model.model.vision_tower.state_dict().items():
        writer.add_tensor(_name(name), tensor.numpy().astype(np.float32))
    projector = model.model.multi_modal_projector
    norm = projector.mm_soft_emb_norm.weight.detach().numpy()
    writer.add_tensor("mm.soft_emb_norm.weight", (norm + 1).astype(np.float32))
    weight = projector.mm_input_projection_weight.detach().numpy()
    writer.add_tensor("mm.input_projection.weight", weight.astype(np.float32))
    return finish_gguf(writer, out)


def write_gguf_pair(model, folder: Path, root: Path, pool: int) -> tuple[Path, Path]:
    """(text GGUF, mmproj GGUF) of the VL model in `folder`."""
    text = text_folder(model, folder, root / "text-hf")
    return write_tiny_gguf(text, root / "text.gguf", F32), write_mmproj(
        model, root / "mmproj.gguf", pool
    )
