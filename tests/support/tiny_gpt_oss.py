"""A tiny random gpt-oss, written as its checkpoints are: an MXFP4 folder (experts as
`*_blocks` / `*_scales`, `quantization_config.quant_method == "mxfp4"`, as released) and the
same model unquantized (experts as transformers dequantizes those blocks), with a harmony
tokenizer (tests/support/reasoning_models.py) and gpt-oss's own chat template.

What the family adds is made to matter: attention sinks of about one logit, q/k scaled up so
the attention is peaked, a 16-token window on every other layer, YaRN over a 32-feature head
(where the ramp's unrounded ends differ from rounded ones), a router four times larger, and
gate/up biases large enough that the SwiGLU's clamps at +-7 cut some values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.support.mxfp4_reference import random_hf
from tests.support.reasoning_models import CORPUS, HARMONY_SPECIALS, TEMPLATES, VOCAB
from tests.support.tiny_tokenizers import train_byte_level_bpe

WINDOW = 16
PROMPT = 40  # past the window
EXPERTS, TOP_K, HIDDEN, WIDTH = 8, 4, 64, 64
CONFIG = {
    "hidden_size": HIDDEN,
    "intermediate_size": WIDTH,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "num_local_experts": EXPERTS,
    "num_experts_per_tok": TOP_K,
    "sliding_window": WINDOW,
    "max_position_embeddings": 2048,  # room for the real chat template's tool listing
    "vocab_size": VOCAB,
}
# transformers' GptOssConfig default (gpt-oss's own), the original context shortened to the
# tiny model's 2048 positions over the factor (the ramp's unrounded upper end, 3.1, is not
# llama.cpp's rounded 4)
ROPE = {
    "rope_type": "yarn",
    "rope_theta": 150000.0,
    "factor": 32.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "truncate": False,
    "original_max_position_embeddings": 64,
}
NOT_CONVERTED = [
    "model.layers.*.self_attn",
    "model.layers.*.mlp.router",
    "model.embed_tokens",
    "lm_head",
]
EXPERT_TENSORS = ("gate_up_proj", "down_proj")


@dataclass(frozen=True)
class TinyGptOss:
    mxfp4: Path  # experts as *_blocks / *_scales
    dense: Path  # the same values unquantized


def _tokenizer(folder: Path) -> dict[str, int]:
    backend = train_byte_level_bpe(CORPUS, HARMONY_SPECIALS, VOCAB)
    backend.save(str(folder / "tokenizer.json"))
    ids = {t: backend.token_to_id(t) for t in HARMONY_SPECIALS}
    config = {
        "bos_token": "<|startoftext|>",
        "eos_token": "<|return|>",
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    template = (TEMPLATES / "gpt_oss.jinja").read_text(encoding="utf-8")
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    return ids


def _generation_config(folder: Path, ids: dict[str, int]) -> None:
    """gpt-oss's: a reply ends at <|return|> or <|call|> (after save_pretrained, which writes
    the model config's single eos)."""
    eos = [ids["<|return|>"], ids["<|endoftext|>"], ids["<|call|>"]]
    generation = {"bos_token_id": ids["<|startoftext|>"], "eos_token_id": eos}
    (folder / "generation_config.json").write_text(json.dumps(generation))


def _blocks(seed: int):
    """Each layer's experts as random MXFP4 blocks (scales 2**-7 .. 2**-4 times E2M1 values:
    weights up to about 0.4)."""
    gate_up = random_hf((EXPERTS,), 2 * WIDTH, HIDDEN, seed, exponents=(120, 124))
    down = random_hf((EXPERTS,), HIDDEN, WIDTH, seed + 1, exponents=(120, 124))
    return {"gate_up_proj": gate_up, "down_proj": down}


def _sharpen(model, gen) -> None:
    import torch

    def draw(shape, scale, base=0.0):
        return base + scale * torch.randn(shape, generator=gen)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(draw(p.shape, 0.1, 1.0))
            elif name.endswith(("q_proj.weight", "k_proj.weight")):
                p.mul_(3.0)
            elif name.endswith("sinks"):
                p.copy_(draw(p.shape, 1.0, 0.5))
            elif name.endswith("router.weight"):
                p.mul_(4.0)
            elif name.endswith("gate_up_proj_bias"):
                p.copy_(draw(p.shape, 4.0))


def _model(ids: dict[str, int], seed: int):
    """transformers' model with random weights, its experts the blocks' values."""
    import torch
    from transformers import AutoModelForCausalLM, GptOssConfig
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    config = GptOssConfig(
        **CONFIG,
        rope_parameters=ROPE,
        bos_token_id=ids["<|startoftext|>"],
        eos_token_id=ids["<|return|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.08, generator=gen)
    _sharpen(model, gen)
    blocks = {}
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            blocks[i] = _blocks(seed + 10 * i)
            for name, (b, s) in blocks[i].items():
                dense = convert_moe_packed_tensors(
                    torch.from_numpy(b), torch.from_numpy(s), dtype=torch.float32
                )
                getattr(layer.mlp.experts, name).copy_(dense)
    return model, blocks


def _mxfp4_folder(dense: Path, out: Path, blocks: dict) -> None:
    """`dense` with each expert weight stored as the blocks and scales it was made from."""
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copytree(dense, out)
    tensors = load_file(str(dense / "model.safetensors"))
    for i, layer in blocks.items():
        for name, (b, s) in layer.items():
            base = f"model.layers.{i}.mlp.experts.{name}"
            del tensors[base]
            tensors[base + "_blocks"], tensors[base + "_scales"] = b, s
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((dense / "config.json").read_text())
    config["quantization_config"] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": NOT_CONVERTED,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))


def make_tiny_gpt_oss(root: Path, seed: int = 41) -> TinyGptOss:
    """Write (once) and return the two folders of the tiny gpt-oss."""
    made = TinyGptOss(root / f"gpt-oss-mxfp4-s{seed}", root / f"gpt-oss-dense-s{seed}")
    if (made.mxfp4 / "config.json").exists():
        return made
    made.dense.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(made.dense)
    model, blocks = _model(ids, seed)
    model.save_pretrained(made.dense)
    _generation_config(made.dense, ids)
    _mxfp4_folder(made.dense, made.mxfp4, blocks)
    return made


def load_mxfp4_reference(folder: Path):
    """transformers' model of the MXFP4 folder, its experts dequantized by transformers
    (exact in bfloat16: E2M1 values times powers of two), computing in float32."""
    import torch
    from transformers import AutoModelForCausalLM, Mxfp4Config

    model = AutoModelForCausalLM.from_pretrained(
        folder, quantization_config=Mxfp4Config(dequantize=True), dtype=torch.float32
    )
    return model.float().eval()
