"""gpt-oss's mixture of experts as a graph of mlcx's TE pieces (the way a family's MoE layer
composes them under MoEOptions: router with a bias, top-k then softmax, expert biases, the
clamped SwiGLU), and transformers' GptOssMLP holding the same weights as its reference.

Weights are random MXFP4 blocks in the checkpoint's layout (`*_blocks` / `*_scales`, gate/up
rows interleaved): mlcx reads them through mlcx.quantization.mxfp4_blocks, transformers through
its own MXFP4 dequantization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.nn.moe import StackedExperts
from mlcx.kernels.linear import matmul_te
from mlcx.kernels.moe import (
    expert_glu_te,
    experts_down_te,
    experts_gate_up_te,
    topk_ids_te,
    topk_softmax_te,
)
from mlcx.kernels.moe_options import GPT_OSS, MoEOptions
from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.formats import DenseFormat, WeightFormat
from tests.support.mxfp4_reference import random_hf


@dataclass(frozen=True)
class MoEShape:
    hidden: int = 64
    width: int = 64  # each expert's intermediate size
    experts: int = 4
    top_k: int = 2


class GptOssMoE(nn.Module):
    def __init__(self, shape: MoEShape, fmt: WeightFormat, options: MoEOptions = GPT_OSS):
        self.shape, self.options = shape, options
        e, h, w = shape.experts, shape.hidden, shape.width
        self.router = nn.Parameter((e, h), "float32")
        self.router_bias = nn.Parameter((e,), "float32")
        self.gate_up = StackedExperts(2 * e * w, h, fmt)
        self.gate_up_bias = nn.Parameter((2 * e * w,), "float32")
        self.down = StackedExperts(e * h, w, fmt)
        self.down_bias = nn.Parameter((e * h,), "float32")

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        s, k = self.shape, self.shape.top_k
        router = DenseFormat("float32")
        logits = op.tensor_expr_op(
            lambda xt, wt: matmul_te(xt, {"weight": wt}, router, s.experts),
            "router",
            [x, self.router],
        )
        logits = logits + self.router_bias
        ids = op.tensor_expr_op(lambda lt: topk_ids_te(lt, k), "topk_ids", [logits])
        weights = op.tensor_expr_op(lambda lt: topk_softmax_te(lt, k), "topk_weights", [logits])
        gu, dn = self.gate_up, self.down

        # operands: input, ids, the weight planes, then the bias (as the expert rewrites read them)
        def gate_up(xt, it, *rest):
            planes, bias = gu.planes(rest[:-1]), rest[-1]
            return experts_gate_up_te(xt, it, planes, gu.fmt, s.experts, s.width, bias)

        def down(ht, it, *rest):
            return experts_down_te(ht, it, dn.planes(rest[:-1]), dn.fmt, s.hidden, rest[-1])

        both = op.tensor_expr_op(
            gate_up, "experts_gate_up", [x, ids, *gu.weights(), self.gate_up_bias]
        )
        h = op.tensor_expr_op(lambda t: expert_glu_te(t, self.options.glu), "expert_glu", [both])
        y = op.tensor_expr_op(down, "experts_down", [h, ids, *dn.weights(), self.down_bias])
        return op.sum(y * op.unsqueeze(weights, -1), axis=1)


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
