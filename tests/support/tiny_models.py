"""Tiny random models in Hugging Face format, built by the tests themselves.

Each folder holds config.json + model.safetensors (written by transformers), a byte-level BPE
tokenizer trained on a small corpus, and a ChatML chat template, so every part of the
pipeline (compile, tokenizer, chat template, runtime) runs as it would on a real model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CORPUS = [
    "The capital of France is Paris. The capital of Italy is Rome.",
    "hello world, this is a tiny corpus 12345 for testing tokenizers and models.",
    "Numbers 2024 and 3.14159; caf\u00e9 na\u00efve \u4e2d\u6587 \U0001f600 emoji!",
    "user assistant system: what is the answer? The answer is forty two.",
] * 40
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    # llama | mistral | qwen2 | qwen3 | phi3 | gemma3 | qwen3_moe | mixtral | olmoe | gemma4 | ...
    arch: str = "llama"
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    layers: int = 2
    intermediate: int = 128
    tie: bool = False
    context: int = 256
    seed: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        extra = ""
        if self.extra:
            blob = json.dumps(self.extra, sort_keys=True).encode()
            extra = "-x" + hashlib.sha256(blob).hexdigest()[:8]
        return (
            f"{self.arch}-h{self.hidden}-q{self.heads}-kv{self.kv_heads}-l{self.layers}"
            f"-t{int(self.tie)}-c{self.context}-s{self.seed}{extra}"
        )


def _tokenizer(folder: Path) -> int:
    from tests.support.tiny_tokenizers import train_byte_level_bpe

    backend = train_byte_level_bpe(CORPUS, SPECIALS, 384)
    backend.save(str(folder / "tokenizer.json"))
    config = {"bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "chat_template": CHATML}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return backend.get_vocab_size()


def _hf_config(spec: TinySpec, vocab: int):
    import transformers

    classes = {
        "llama": "LlamaConfig",
        "mistral": "MistralConfig",
        "qwen2": "Qwen2Config",
        "qwen3": "Qwen3Config",
        "phi3": "Phi3Config",
        "gemma3": "Gemma3TextConfig",
        "qwen3_moe": "Qwen3MoeConfig",
        "mixtral": "MixtralConfig",
        "olmoe": "OlmoeConfig",
        "gemma2": "Gemma2Config",
        "olmo2": "Olmo2Config",
        "olmo3": "Olmo3Config",
        "granite": "GraniteConfig",
        "smollm3": "SmolLM3Config",
        "ministral3": "Ministral3Config",
        "gemma4": "Gemma4TextConfig",
        "qwen3_5": "Qwen3_5TextConfig",
        "qwen3_5_moe": "Qwen3_5MoeTextConfig",
        "lfm2": "Lfm2Config",
    }
    cls = getattr(transformers, classes[spec.arch])
    kwargs = dict(
        hidden_size=spec.hidden,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        num_hidden_layers=spec.layers,
        intermediate_size=spec.intermediate,
        vocab_size=vocab,
        tie_word_embeddings=spec.tie,
        max_position_embeddings=spec.context,
        bos_token_id=0,
        eos_token_id=2,
        **spec.extra,
    )
    if spec.arch in ("mistral", "phi3", "mixtral"):
        kwargs.setdefault("sliding_window", None)
    if spec.arch == "phi3":
        kwargs.setdefault("pad_token_id", 1)  # Phi3Config's default 32000 is past the vocab
    if spec.arch == "gemma4":  # its per-layer input table defaults to 262144 rows
        kwargs.setdefault("vocab_size_per_layer_input", vocab)
        kwargs.setdefault("pad_token_id", 1)
    return cls(**kwargs)


def make_tiny_model(root: Path, spec: TinySpec = TinySpec()) -> Path:
    """Write (once) and return the folder of a tiny random model."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = root / spec.key
    if (folder / "config.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    vocab = _tokenizer(folder)
    torch.manual_seed(spec.seed)
    model = AutoModelForCausalLM.from_config(_hf_config(spec, vocab), dtype=torch.float32)
    with torch.no_grad():  # larger weights than the init default, so logits differ visibly
        for p in model.parameters():
            if p.dim() >= 1:
                p.normal_(0.0, 0.08)
    model.eval().save_pretrained(folder)
    return folder


def load_reference(folder: Path):
    """The same model in HF transformers (CPU, fp32): the independent reference."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def sharpened(src: Path, dst: Path, seed: int, attention: Callable) -> Path:
    """A copy whose attention is far from uniform, so q/k layout and RoPE errors show.

    The tiny models' random norm weights (~0.08) make every attention score near zero, and a
    wrong q/k path would then pass: layer norms go to unit scale and `attention(self_attn,
    generator)` makes the architecture's own q/k parameters larger."""
    import torch

    def edit(model, gen) -> None:
        for layer in model.model.layers:
            norm = layer.input_layernorm.weight
            norm.copy_(1.0 + 0.1 * torch.randn(norm.shape, generator=gen))
            attention(layer.self_attn, gen)

    return edited_copy(src, dst, seed, edit)


def edited_copy(src: Path, dst: Path, seed: int, edit: Callable) -> Path:
    """A copy of the model in `src` at `dst` whose parameters `edit(model, generator)` changed
    in transformers (no grad; the generator seeded with `seed`); an existing `dst` is kept."""
    import shutil

    import torch

    if dst.exists():
        return dst
    shutil.copytree(src, dst)
    model = load_reference(src)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        edit(model, gen)
    model.save_pretrained(dst)
    return dst


def _phi3_peaked(attn, gen) -> None:
    """Phi-3's q rows of the fused qkv_proj scaled up, every row nudged."""
    import torch

    q_rows = attn.config.num_attention_heads * attn.head_dim
    attn.qkv_proj.weight[:q_rows].mul_(3.0)
    attn.qkv_proj.weight.add_(0.02 * torch.randn(attn.qkv_proj.weight.shape, generator=gen))


def sharpen_phi3(src: Path, dst: Path, seed: int) -> Path:
    return sharpened(src, dst, seed, _phi3_peaked)


def _qwen3_norms(attn, gen) -> None:
    import torch

    # scale 1.5, different per head feature: a missing or swapped q/k norm shows
    for head_norm in (attn.q_norm.weight, attn.k_norm.weight):
        head_norm.copy_(1.5 * torch.randn(head_norm.shape, generator=gen))


def sharpen_qwen3(src: Path, dst: Path, seed: int) -> Path:
    return sharpened(src, dst, seed, _qwen3_norms)


def sharpen_gemma3(src: Path, dst: Path, seed: int) -> Path:
    """Gemma's q/k norms scale by 1 + w: the same draws make them peaked and uneven."""
    return sharpened(src, dst, seed, _qwen3_norms)


# A tiny Gemma 3 with one local (window 16) and one global layer: the mix whose pages stay.
GEMMA3_LOCAL_GLOBAL = {
    "head_dim": 32,
    "sliding_window": 16,
    "layer_types": ["sliding_attention", "full_attention"],
}


# Long-context RoPE (tests/models/test_long_context_rope.py): Llama 3.1's llama3 scaling over a
# 32-token pretraining context, and a Qwen2 with YaRN whose config keeps that length as its
# maximum (as Qwen's do), so 32 x factor 4 = 128 tokens need the scaled maximum.
ROPE_ORIGINAL = 32
ROPE_THETA = 10000.0
LLAMA3 = TinySpec(
    arch="llama",
    context=256,
    seed=61,
    extra={
        "rope_parameters": {
            "rope_type": "llama3",
            "rope_theta": ROPE_THETA,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": ROPE_ORIGINAL,
        }
    },
)
YARN = TinySpec(
    arch="qwen2",
    context=ROPE_ORIGINAL,
    seed=62,
    extra={
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": ROPE_THETA,
            "factor": 4.0,
            "original_max_position_embeddings": ROPE_ORIGINAL,
        }
    },
)


# Phi-4-mini's attention in miniature: RoPE over 0.75 of each head (12 of 16 features, so 6
# LongRoPE factors a list, far from 1 so a wrong choice of list moves the logits), GQA and a
# head tied to the embedding; 64-token pretraining context, 256 positions.
PHI4_ORIGINAL = 64
PHI4_MINI = TinySpec(
    arch="phi3",
    kv_heads=2,
    tie=True,
    seed=53,
    extra={
        "original_max_position_embeddings": PHI4_ORIGINAL,
        "rope_parameters": {
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.75,
            "short_factor": [1.0, 1.5, 2.0, 3.0, 4.0, 6.0],
            "long_factor": [1.0, 3.0, 6.0, 12.0, 20.0, 32.0],
            "attention_factor": 1.25,  # f32-exact: the GGUF stores it as f32
        },
    },
)
