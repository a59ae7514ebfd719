"""Mixture-of-experts layers: a softmax router choosing the top-k experts per token, each a
gated MLP, their outputs summed by the router weights (Qwen3-MoE, Mixtral, OLMoE).

Parameters of layer i's MoE (`layers.i.moe.`): `router` [experts, hidden], dense (llama.cpp keeps
`ffn_gate_inp` in float too: the top-k choice is sensitive to rounding); `gate_up` and `down`
stacked over experts (mlcx.kernels.moe's layout) in any weight format. Gemma 4's experts
(DecoderConfig.moe_dense_mlp) also have `router_norm.weight` (the router's input is RMS-normed
times it / sqrt(hidden)) and `expert_scale` [experts] (each expert's output times its own).
"""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import ACTIVATIONS, Formats
from mlcx.kernels.linear import matmul_te
from mlcx.kernels.moe import (
    expert_scaled_te,
    experts_down_te,
    experts_gate_up_te,
    topk_ids_te,
    topk_weights_te,
)
from mlcx.quantization.formats import WeightFormat, format_from_name


class StackedExperts(nn.Module):
    """One weight stacked over experts: [experts * rows, in_features] in `fmt`."""

    def __init__(self, rows: int, in_features: int, fmt: WeightFormat):
        self.fmt = fmt
        self.names = []
        for suffix, (shape, dtype) in fmt.param_specs(rows, in_features).items():
            setattr(self, suffix, nn.Parameter(shape, dtype))
            self.names.append(suffix)

    def weights(self) -> list[nn.Tensor]:
        return [getattr(self, n) for n in self.names]

    def planes(self, tensors) -> dict:
        return dict(zip(self.names, tensors, strict=True))


class MoEMLP(nn.Module):
    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, dtype: str):
        self.cfg = cfg
        self.act = ACTIVATIONS[cfg.hidden_act]
        experts, width = cfg.num_experts, cfg.expert_intermediate_size
        self.router = nn.Parameter((experts, cfg.hidden_size), dtype)
        self.router_norm = self.expert_scale = None
        if cfg.moe_dense_mlp:
            self.router_norm = nn.RMSNorm(
                cfg.hidden_size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype
            )
            self.expert_scale = nn.Parameter((experts,), dtype)
        self.gate_up = StackedExperts(
            2 * experts * width, cfg.hidden_size, formats[prefix + "gate_up"]
        )
        self.down = StackedExperts(experts * cfg.hidden_size, width, formats[prefix + "down"])

    def forward(self, x: nn.Tensor, routed: nn.Tensor | None = None) -> nn.Tensor:
        """The experts of x, chosen by the router from `routed` (x where None)."""
        cfg, k = self.cfg, self.cfg.experts_per_token
        probs = op.softmax(self._router(x if routed is None else routed), axis=-1)
        ids = op.tensor_expr_op(lambda p: topk_ids_te(p, k), "topk_ids", [probs])
        weights = op.tensor_expr_op(
            lambda p: topk_weights_te(p, k, cfg.norm_topk_prob), "topk_weights", [probs]
        )
        if self.expert_scale is not None:
            scale = [weights, ids, self.expert_scale]
            weights = op.tensor_expr_op(expert_scaled_te, "expert_scaled", scale)
        gate, up = op.split(self._gate_up(x, ids), 2, axis=-1)
        y = self._down(self.act(gate) * up, ids)  # [tokens, k, hidden]
        mixed = op.sum(y.astype("float32") * op.unsqueeze(weights, -1), axis=1)
        return mixed.astype(x.dtype)

    def _router(self, x: nn.Tensor) -> nn.Tensor:
        """Router logits in float32, as a linear layer of float weights: targets swap it for
        their linear kernels (a transpose and a plain matmul cost a quarter of a CPU decode)."""
        fmt, experts = format_from_name(self.router.dtype), self.cfg.num_experts
        if self.router_norm is not None:
            x = self.router_norm(x) * (self.cfg.hidden_size**-0.5)
        x32 = x if x.dtype == "float32" else x.astype("float32")

        def compute(xt, wt):
            return matmul_te(xt, {"weight": wt}, fmt, experts)

        return op.tensor_expr_op(compute, "router", [x32, self.router])

    def _gate_up(self, x: nn.Tensor, ids: nn.Tensor) -> nn.Tensor:
        stack, cfg = self.gate_up, self.cfg

        def compute(xt, it, *ws):
            planes = stack.planes(ws)
            width = cfg.expert_intermediate_size
            return experts_gate_up_te(xt, it, planes, stack.fmt, cfg.num_experts, width)

        return op.tensor_expr_op(compute, "experts_gate_up", [x, ids, *stack.weights()])

    def _down(self, h: nn.Tensor, ids: nn.Tensor) -> nn.Tensor:
        stack, hidden = self.down, self.cfg.hidden_size

        def compute(ht, it, *ws):
            return experts_down_te(ht, it, stack.planes(ws), stack.fmt, hidden)

        return op.tensor_expr_op(compute, "experts_down", [h, ids, *stack.weights()])
