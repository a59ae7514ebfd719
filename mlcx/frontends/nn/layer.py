"""The decoder layer every generative family shares: a token mixer (attention, or a hybrid
model's state layer: mlcx.frontends.nn.state_blocks), then a feed-forward block (a gated MLP,
or a mixture of experts where the config has experts, or Gemma 4's both), each residual, with
the RMSNorms the config's `norm_layout` names around them (DecoderConfig.layer_norms); then,
where the config has them, Gemma 4's per-layer input and output scalar."""

from __future__ import annotations

from tvm.relax.frontend import nn

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.hybrid_config import ATTENTION
from mlcx.frontends.nn.blocks import Formats, GatedMLP, PagedAttention
from mlcx.frontends.nn.lora import LoraStep
from mlcx.frontends.nn.moe import MoEMLP
from mlcx.frontends.nn.per_layer_inputs import PerLayerGate
from mlcx.frontends.nn.state_blocks import MIXERS
from mlcx.kernels.attention import PagedKVOps, StepTensors
from mlcx.kernels.hybrid.ops import StateOps, StateStep


class DecoderLayer(nn.Module):
    """x + post(mix(pre(x))), then x + post(ffn(pre(x))); a norm the layout lacks is skipped.
    Parameters: `attn_norm`, `attn.*` (or the state layer's `delta.*`, `conv.*`),
    `attn_post_norm`, `mlp_norm`, `mlp.*` and/or `moe.*`, `mlp_post_norm`, Gemma 4's
    DENSE_MOE_NORMS, `ple.*` and `layer_scalar` (mlcx.frontends.decoder_weights reads the same
    names). `cache`: an attention layer's KV pages, a state layer's tuple of state tensors
    (`states`: the model's StateOps)."""

    def __init__(
        self,
        cfg: DecoderConfig,
        formats: Formats,
        index: int,
        kv: PagedKVOps,
        states: StateOps | None = None,
    ):
        prefix = f"layers.{index}."
        dtype = kv.layout.dtype
        self.residual_scale = cfg.residual_scale
        for name in cfg.layer_norms:
            norm = nn.RMSNorm(cfg.hidden_size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)
            setattr(self, name, norm)
        self.kind = cfg.layer_kind(index)
        if self.kind == ATTENTION:
            self.attn = PagedAttention(cfg, formats, prefix + "attn.", kv, index)
        else:
            if states is None:
                raise ValueError(f"layer {index} is a {self.kind} layer: pass the StateOps")
            mixer = MIXERS[self.kind](cfg, formats, f"{prefix}{self.kind}.", states, dtype)
            setattr(self, self.kind, mixer)
        self.mlp = self.moe = self.ple = self.layer_scalar = None
        if not cfg.is_moe or cfg.moe_dense_mlp:
            width = cfg.layer_intermediate(index)
            self.mlp = GatedMLP(cfg, formats, prefix + "mlp.", dtype, width)
        if cfg.is_moe:
            self.moe = MoEMLP(cfg, formats, prefix + "moe.", dtype)
        if cfg.per_layer_input_size:
            self.ple = PerLayerGate(cfg, formats, prefix + "ple.", dtype)
        if cfg.layer_scalar:
            self.layer_scalar = nn.Parameter((1,), dtype)

    def _norm(self, name: str, x: nn.Tensor) -> nn.Tensor:
        norm = getattr(self, name, None)
        return x if norm is None else norm(x)

    def forward(
        self,
        x: nn.Tensor,
        cache,
        step: StepTensors,
        decode: bool,
        state_step: StateStep | None = None,
        per_layer: nn.Tensor | None = None,
    ):
        """`per_layer`: this layer's per-layer input [tokens, width], where the model has them."""
        h = self._norm("attn_norm", x)
        if self.kind == ATTENTION:
            h, cache = self.attn(h, cache, step, decode)
        else:
            h, cache = getattr(self, self.kind)(h, cache, state_step, decode)
        x = x + self._scaled(self._norm("attn_post_norm", h))
        x = x + self._scaled(self._norm("mlp_post_norm", self._ffn(x, step.lora)))
        if self.ple is not None and per_layer is not None:
            x = self.ple(x, per_layer)
        if self.layer_scalar is not None:
            x = x * self.layer_scalar
        return x, cache

    def _ffn(self, x: nn.Tensor, lora: LoraStep | None) -> nn.Tensor:
        """The feed-forward block; experts take no adapters (mlcx.frontends.lora.layout
        refuses them)."""
        h = self._norm("mlp_norm", x)
        if self.moe is None:
            return self.mlp(h, lora)
        if self.mlp is None:
            return self.moe(h)
        # Gemma 4: the experts read x under their own norm, routed from x itself
        dense = self._norm("dense_post_norm", self.mlp(h, lora))
        return dense + self._norm("moe_post_norm", self.moe(self._norm("moe_norm", x), x))

    def _scaled(self, x: nn.Tensor) -> nn.Tensor:
        return x if self.residual_scale == 1.0 else x * self.residual_scale
