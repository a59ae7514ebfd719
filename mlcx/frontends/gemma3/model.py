"""Gemma 3 text: each sub-block is normalized before and after (the output norm before the
residual add), the MLP is GeGLU, embeddings are scaled by sqrt(hidden_size), and sliding-window
layers with their own RoPE base interleave with global layers (DecoderConfig decides per layer).

The (1 + w) RMSNorm weights are stored as 1 + w by the weight mapping, so the shared RMSNorm
serves here as it does elsewhere.
"""

from __future__ import annotations

from tvm.relax.frontend import nn

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import Formats, GatedMLP, PagedAttention
from mlcx.frontends.nn.causal_lm import CausalLM
from mlcx.kernels.attention import PagedKVOps, StepTensors


def _norm(cfg: DecoderConfig, dtype: str) -> nn.RMSNorm:
    return nn.RMSNorm(cfg.hidden_size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)


class SandwichDecoderLayer(nn.Module):
    def __init__(self, cfg: DecoderConfig, formats: Formats, index: int, kv: PagedKVOps):
        prefix = f"layers.{index}."
        dtype = kv.layout.dtype
        self.input_norm = _norm(cfg, dtype)
        self.attn = PagedAttention(cfg, formats, prefix + "attn.", kv, index)
        self.post_attn_norm = _norm(cfg, dtype)
        self.pre_mlp_norm = _norm(cfg, dtype)
        self.mlp = GatedMLP(cfg, formats, prefix + "mlp.", dtype)
        self.post_mlp_norm = _norm(cfg, dtype)

    def forward(
        self, x: nn.Tensor, pages: nn.Tensor, step: StepTensors, decode: bool
    ) -> tuple[nn.Tensor, nn.Tensor]:
        attn, pages = self.attn(self.input_norm(x), pages, step, decode)
        x = x + self.post_attn_norm(attn)
        return x + self.post_mlp_norm(self.mlp(self.pre_mlp_norm(x))), pages


def build(cfg: DecoderConfig, formats: Formats, kv: PagedKVOps) -> CausalLM:
    return CausalLM(cfg, formats, kv, layer=SandwichDecoderLayer)
