"""The decoder layer every generative family shares: a token mixer (attention, or a hybrid
model's state layer: mlcx.frontends.nn.state_blocks), then a feed-forward block (a gated MLP,
or a mixture of experts where the config has experts), each residual, with the RMSNorms the
config's `norm_layout` names around them (DecoderConfig.layer_norms)."""

from __future__ import annotations

from tvm.relax.frontend import nn

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.hybrid_config import ATTENTION
from mlcx.frontends.nn.blocks import Formats, GatedMLP, PagedAttention
from mlcx.frontends.nn.moe import MoEMLP
from mlcx.frontends.nn.state_blocks import MIXERS
from mlcx.kernels.attention import PagedKVOps, StepTensors
from mlcx.kernels.hybrid.ops import StateOps, StateStep


class DecoderLayer(nn.Module):
    """x + post(mix(pre(x))), then x + post(ffn(pre(x))); a norm the layout lacks is skipped.
    Parameters: `attn_norm`, `attn.*` (or the state layer's `delta.*`, `conv.*`),
    `attn_post_norm`, `mlp_norm`, `mlp.*` or `moe.*`, `mlp_post_norm`
    (mlcx.frontends.decoder_weights reads the same names). `cache`: an attention layer's KV
    pages, a state layer's tuple of state tensors (`states`: the model's StateOps)."""

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
        self.ffn_name = "moe" if cfg.is_moe else "mlp"
        block = MoEMLP if cfg.is_moe else GatedMLP
        setattr(self, self.ffn_name, block(cfg, formats, f"{prefix}{self.ffn_name}.", dtype))

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
    ):
        h = self._norm("attn_norm", x)
        if self.kind == ATTENTION:
            h, cache = self.attn(h, cache, step, decode)
        else:
            h, cache = getattr(self, self.kind)(h, cache, state_step, decode)
        x = x + self._scaled(self._norm("attn_post_norm", h))
        h = self._norm("mlp_norm", x)
        # experts take no adapters (mlcx.frontends.lora.layout refuses them)
        ffn = self.mlp(h, step.lora) if self.ffn_name == "mlp" else self.moe(h)
        return x + self._scaled(self._norm("mlp_post_norm", ffn)), cache

    def _scaled(self, x: nn.Tensor) -> nn.Tensor:
        return x if self.residual_scale == 1.0 else x * self.residual_scale
