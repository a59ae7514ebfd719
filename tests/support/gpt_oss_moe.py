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
    topk_weights_te,
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
    """A MoE layer under `options` (gpt-oss's by default): activations in `dtype`, the router
    in float32 (as mlcx.frontends.nn.moe keeps it)."""

    def __init__(
        self, shape: MoEShape, fmt: WeightFormat, options: MoEOptions = GPT_OSS, dtype="float32"
    ):
        self.shape, self.options, self.dtype = shape, options, dtype
        e, h, w = shape.experts, shape.hidden, shape.width
        self.router = nn.Parameter((e, h), "float32")
        self.router_bias = nn.Parameter((e,), "float32") if options.router_bias else None
        self.gate_up = StackedExperts(2 * e * w, h, fmt)
        self.down = StackedExperts(e * h, w, fmt)
        bias = options.expert_bias
        self.gate_up_bias = nn.Parameter((2 * e * w,), dtype) if bias else None
        self.down_bias = nn.Parameter((e * h,), dtype) if bias else None

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        ids, weights = self._route(x)
        both = self._experts(x, ids, self.gate_up, self.gate_up_bias)
        glu = self.options.glu
        h = op.tensor_expr_op(lambda t: expert_glu_te(t, glu), "expert_glu", [both])
        y = self._experts(h, ids, self.down, self.down_bias)
        mixed = op.sum(y.astype("float32") * op.unsqueeze(weights, -1), axis=1)
        return mixed.astype(self.dtype)

    def _route(self, x: nn.Tensor):
        s, k, router = self.shape, self.shape.top_k, DenseFormat("float32")
        x32 = x if x.dtype == "float32" else x.astype("float32")
        logits = op.tensor_expr_op(
            lambda xt, wt: matmul_te(xt, {"weight": wt}, router, s.experts),
            "router",
            [x32, self.router],
        )
        if self.router_bias is not None:
            logits = logits + self.router_bias
        ids = op.tensor_expr_op(lambda lt: topk_ids_te(lt, k), "topk_ids", [logits])
        if self.options.scoring == "topk_softmax":
            weights = op.tensor_expr_op(lambda lt: topk_softmax_te(lt, k), "topk_weights", [logits])
        else:
            renorm = self.options.renormalize
            probs = op.softmax(logits, axis=-1)
            weights = op.tensor_expr_op(
                lambda p: topk_weights_te(p, k, renorm), "topk_weights", [probs]
            )
        return ids, weights

    def _experts(self, x, ids, stack: StackedExperts, bias) -> nn.Tensor:
        """A stacked expert GEMV; operands (input, ids, weight planes..., bias), the order the
        expert rewrites read."""
        s, count = self.shape, len(stack.names)

        def compute(xt, it, *rest):
            planes, b = stack.planes(rest[:count]), (rest[count] if bias is not None else None)
            if stack is self.gate_up:
                return experts_gate_up_te(xt, it, planes, stack.fmt, s.experts, s.width, b)
            return experts_down_te(xt, it, planes, stack.fmt, s.hidden, b)

        name = "experts_gate_up" if stack is self.gate_up else "experts_down"
        extra = [bias] if bias is not None else []
        return op.tensor_expr_op(compute, name, [x, ids, *stack.weights(), *extra])


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
