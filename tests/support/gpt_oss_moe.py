"""gpt-oss's mixture of experts: the shared decoder's MoE block (mlcx.frontends.nn.moe) under
gpt-oss's MoEOptions (router with a bias, top-k then softmax, expert biases, the clamped
SwiGLU), and transformers' GptOssMLP holding the same weights as its reference.

Weights are random MXFP4 blocks in the checkpoint's layout (`*_blocks` / `*_scales`, gate/up
rows interleaved): mlcx reads them through mlcx.quantization.mxfp4_blocks, transformers through
its own MXFP4 dequantization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.moe import MoEMLP
from mlcx.kernels.moe_options import GPT_OSS, MoEOptions
from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.formats import WeightFormat
from tests.support.mxfp4_reference import random_hf


@dataclass(frozen=True)
class MoEShape:
    hidden: int = 64
    width: int = 64  # each expert's intermediate size
    experts: int = 4
    top_k: int = 2


def moe_config(shape: MoEShape, options: MoEOptions = GPT_OSS) -> DecoderConfig:
    """A decoder config whose MoE is `shape` under `options` (the attention fields unused)."""
    glu = options.glu
    return DecoderConfig(
        vocab_size=1, hidden_size=shape.hidden, intermediate_size=shape.width, num_layers=1,
        num_heads=1, num_kv_heads=1, head_dim=2, context_window=1,
        num_experts=shape.experts, experts_per_token=shape.top_k,
        expert_intermediate_size=shape.width, norm_topk_prob=options.renormalize,
        router_bias=options.router_bias, topk_softmax=options.scoring == "topk_softmax",
        expert_bias=options.expert_bias, glu_alpha=glu.alpha, glu_limit=glu.limit or 0.0,
        glu_up_shift=glu.up_shift,
    )  # fmt: skip


def GptOssMoE(  # noqa: N802 (a module, as the decoder builds it)
    shape: MoEShape, fmt: WeightFormat, options: MoEOptions = GPT_OSS, dtype="float32"
) -> MoEMLP:
    """The shared decoder's MoE block under `options` (gpt-oss's by default), activations and
    router in `dtype`; parameters `router`, `router_bias`, `gate_up.*`, `down.*`,
    `gate_up_bias`, `down_bias`."""
    cfg = moe_config(shape, options)
    assert cfg.moe_options == options
    return MoEMLP(cfg, {"gate_up": fmt, "down": fmt}, "", dtype)


@dataclass
class Checkpoint:
    """gpt-oss-style tensors of one MoE layer (numpy, as a safetensors file holds them)."""

    router: np.ndarray
    router_bias: np.ndarray
    gate_up_blocks: np.ndarray
    gate_up_scales: np.ndarray
    gate_up_bias: np.ndarray
    down_blocks: np.ndarray
    down_scales: np.ndarray
    down_bias: np.ndarray


def random_checkpoint(shape: MoEShape, seed: int) -> Checkpoint:
    rng = np.random.default_rng(seed)
    e, h, w = shape.experts, shape.hidden, shape.width
    # one layer's blocks: scales 2**-7 .. 2**-3 (weights up to about 0.1, as gpt-oss's)
    gate_up = random_hf((e,), 2 * w, h, seed + 1, exponents=(121, 126))
    down = random_hf((e,), h, w, seed + 2, exponents=(121, 126))

    def normal(*dims, scale=1.0):
        return (rng.standard_normal(dims) * scale).astype(np.float32)

    return Checkpoint(normal(e, h), normal(e), *gate_up, normal(e, 2 * w), *down, normal(e, h))


def mlcx_params(ckpt: Checkpoint, fmt) -> dict[str, np.ndarray]:
    """The module's parameters by name, read from the checkpoint's tensors."""
    params = {"router": ckpt.router, "router_bias": ckpt.router_bias}
    gate_up = mb.hf_gate_up_planes(ckpt.gate_up_blocks, ckpt.gate_up_scales, fmt)
    params |= {f"gate_up.{k}": v for k, v in gate_up.items()}
    params["gate_up_bias"] = mb.hf_gate_up_bias(ckpt.gate_up_bias)
    down = mb.hf_planes(ckpt.down_blocks, ckpt.down_scales, fmt)
    params |= {f"down.{k}": v for k, v in down.items()}
    params["down_bias"] = mb.hf_expert_bias(ckpt.down_bias)
    return params


def transformers_mlp(shape: MoEShape, ckpt: Checkpoint):
    """transformers' GptOssMLP (router + experts, float32) holding the checkpoint's weights."""
    from transformers import GptOssConfig
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssMLP

    config = GptOssConfig(
        hidden_size=shape.hidden,
        intermediate_size=shape.width,
        num_local_experts=shape.experts,
        num_experts_per_tok=shape.top_k,
    )
    config._experts_implementation = "eager"  # GptOssExperts.forward as written
    mlp = GptOssMLP(config).eval()

    def dense(blocks, scales):
        return convert_moe_packed_tensors(
            torch.from_numpy(blocks), torch.from_numpy(scales), dtype=torch.float32
        )

    with torch.no_grad():
        mlp.router.weight.copy_(torch.from_numpy(ckpt.router))
        mlp.router.bias.copy_(torch.from_numpy(ckpt.router_bias))
        mlp.experts.gate_up_proj.copy_(dense(ckpt.gate_up_blocks, ckpt.gate_up_scales))
        mlp.experts.gate_up_proj_bias.copy_(torch.from_numpy(ckpt.gate_up_bias))
        mlp.experts.down_proj.copy_(dense(ckpt.down_blocks, ckpt.down_scales))
        mlp.experts.down_proj_bias.copy_(torch.from_numpy(ckpt.down_bias))
    return mlp
