"""Mixture-of-experts layers: a router choosing the top-k experts per token, each a gated
MLP, their outputs summed by the router weights (Qwen3-MoE, Mixtral, OLMoE, gpt-oss).

Parameters of layer i's MoE (`layers.i.moe.`): `router` [experts, hidden], dense (llama.cpp keeps
`ffn_gate_inp` in float too: the top-k choice is sensitive to rounding); `gate_up` and `down`
stacked over experts (mlcx.kernels.moe's layout) in any weight format; where the config's
MoEOptions have them, `router_bias` [experts], `gate_up_bias` and `down_bias` (a value per
stacked row).
A shared expert where the config has one (Qwen3.5-MoE): `shared_gate_up`, `shared_down`, a
gated MLP every token takes, scaled by sigmoid(x . `shared_router`) ([1, hidden], dense as the
router). Gemma 4's experts (DecoderConfig.moe_dense_mlp) also have `router_norm.weight` (the
router's input is RMS-normed times it / sqrt(hidden)) and `expert_scale` [experts] (each
expert's output times its own).
"""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import ACTIVATIONS, Formats
from mlcx.frontends.nn.linear import QLinear
from mlcx.kernels.linear import matmul_te
from mlcx.kernels.moe import (
    expert_glu_te,
    expert_scaled_te,
    experts_down_te,
    experts_gate_up_te,
    topk_ids_te,
    topk_softmax_te,
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
    """Router, top-k, the chosen experts' gate/up, the gated activation, down, mixed by the
    router weights; the config's MoEOptions say the router's bias and scoring, the experts'
    biases and their activation (gpt-oss: a router bias, top-k then softmax, biases, the
    clamped SwiGLU as its own annotated TE function, which the targets fuse into the down
    projection's kernel). Biases are a value per stacked row, in the activations' dtype."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, dtype: str):
        self.cfg, self.options = cfg, cfg.moe_options
        self.act = ACTIVATIONS[cfg.hidden_act]
        experts, width = cfg.num_experts, cfg.expert_intermediate_size
        self.router = nn.Parameter((experts, cfg.hidden_size), dtype)
        self.router_bias = nn.Parameter((experts,), dtype) if self.options.router_bias else None
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
        biased = self.options.expert_bias
        self.gate_up_bias = nn.Parameter((2 * experts * width,), dtype) if biased else None
        self.down_bias = nn.Parameter((experts * cfg.hidden_size,), dtype) if biased else None
        shared, hidden = cfg.shared_expert_size, cfg.hidden_size
        if shared:
            self.shared_gate_up = QLinear(
                hidden, 2 * shared, formats[prefix + "shared_gate_up"], dtype, False
            )
            self.shared_down = QLinear(
                shared, hidden, formats[prefix + "shared_down"], dtype, False
            )
            self.shared_router = nn.Parameter((1, hidden), dtype)

    def forward(self, x: nn.Tensor, routed: nn.Tensor | None = None) -> nn.Tensor:
        """The experts of x, chosen by the router from `routed` (x where None)."""
        ids, weights = self._route(x if routed is None else routed)
        if self.expert_scale is not None:
            scale = [weights, ids, self.expert_scale]
            weights = op.tensor_expr_op(expert_scaled_te, "expert_scaled", scale)
        h = self._activation(self._gate_up(x, ids))
        y = self._down(h, ids)  # [tokens, k, hidden]
        mixed = op.sum(y.astype("float32") * op.unsqueeze(weights, -1), axis=1)
        if self.cfg.shared_expert_size:
            mixed = mixed + self._shared(x)
        return mixed.astype(x.dtype)

    def _route(self, x: nn.Tensor) -> tuple[nn.Tensor, nn.Tensor]:
        """(expert ids, their weights) [tokens, k] of each token."""
        if self.router_norm is not None:
            x = self.router_norm(x) * (self.cfg.hidden_size**-0.5)
        k, logits = self.cfg.experts_per_token, self._router(x)
        bias = self.router_bias
        if bias is not None:
            logits = logits + (bias if bias.dtype == "float32" else bias.astype("float32"))
        if self.options.scoring == "topk_softmax":
            ids = op.tensor_expr_op(lambda t: topk_ids_te(t, k), "topk_ids", [logits])
            weights = op.tensor_expr_op(lambda t: topk_softmax_te(t, k), "topk_weights", [logits])
            return ids, weights
        probs, renorm = op.softmax(logits, axis=-1), self.options.renormalize
        ids = op.tensor_expr_op(lambda p: topk_ids_te(p, k), "topk_ids", [probs])
        weights = op.tensor_expr_op(
            lambda p: topk_weights_te(p, k, renorm), "topk_weights", [probs]
        )
        return ids, weights

    def _activation(self, both: nn.Tensor) -> nn.Tensor:
        """[tokens, k, width] of each slot's gate/up: SwiGLU as Relax ops (the expert rewrites
        read act(gate) * up), any other activation as expert_glu_te."""
        glu = self.options.glu
        if glu.plain:
            gate, up = op.split(both, 2, axis=-1)
            return self.act(gate) * up
        return op.tensor_expr_op(lambda t: expert_glu_te(t, glu), "expert_glu", [both])

    def _shared(self, x: nn.Tensor) -> nn.Tensor:
        """The shared expert's output times its sigmoid gate, in float32."""
        gate, up = op.split(self.shared_gate_up(x), 2, axis=-1)
        y = self.shared_down(self.act(gate) * up)
        y = y if y.dtype == "float32" else y.astype("float32")
        return y * op.sigmoid(self._router(x, self.shared_router))

    def _router(self, x: nn.Tensor, weight: nn.Parameter | None = None) -> nn.Tensor:
        """Router logits in float32, as a linear layer of float weights: targets swap it for
        their linear kernels (a transpose and a plain matmul cost a quarter of a CPU decode)."""
        weight = self.router if weight is None else weight
        fmt, rows = format_from_name(weight.dtype), int(weight.shape[0])
        x32 = x if x.dtype == "float32" else x.astype("float32")

        def compute(xt, wt):
            return matmul_te(xt, {"weight": wt}, fmt, rows)

        return op.tensor_expr_op(compute, "router", [x32, weight])

    def _gate_up(self, x: nn.Tensor, ids: nn.Tensor) -> nn.Tensor:
        stack, cfg, bias = self.gate_up, self.cfg, self.gate_up_bias
        count = len(stack.names)

        def compute(xt, it, *rest):
            planes, b = stack.planes(rest[:count]), (rest[count] if bias is not None else None)
            width = cfg.expert_intermediate_size
            return experts_gate_up_te(xt, it, planes, stack.fmt, cfg.num_experts, width, b)

        operands = [x, ids, *stack.weights(), *([bias] if bias is not None else [])]
        return op.tensor_expr_op(compute, "experts_gate_up", operands)

    def _down(self, h: nn.Tensor, ids: nn.Tensor) -> nn.Tensor:
        stack, hidden, bias = self.down, self.cfg.hidden_size, self.down_bias
        count = len(stack.names)

        def compute(ht, it, *rest):
            planes, b = stack.planes(rest[:count]), (rest[count] if bias is not None else None)
            return experts_down_te(ht, it, planes, stack.fmt, hidden, b)

        operands = [h, ids, *stack.weights(), *([bias] if bias is not None else [])]
        return op.tensor_expr_op(compute, "experts_down", operands)
