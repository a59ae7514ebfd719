"""Per-layer inputs (Gemma 4): every layer gates in a small vector of its own for each token.

The model makes them once per step: an embedding table of num_layers x width features per
token (times sqrt(width)), and a projection of the (scaled) token embeddings (divided by
sqrt(hidden), each layer's slice RMS-normed), summed and divided by sqrt(2). Layer i then adds
norm(out(act(gate(x)) * inputs[:, i])) to its output.

Parameters: `ple.embed` (the table), `ple.proj`, `ple.norm.weight` on the model; `ple.gate`,
`ple.out`, `ple.post_norm.weight` on each layer (`layers.i.`; mlcx.frontends.decoder_weights).
"""

from __future__ import annotations

import math

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import ACTIVATIONS, Formats
from mlcx.frontends.nn.linear import QEmbedding, QLinear


class PerLayerInputs(nn.Module):
    """tokens, their scaled embeddings [t, hidden] -> inputs [t, num_layers, width]."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, dtype: str):
        self.cfg = cfg
        layers, width = cfg.num_layers, cfg.per_layer_input_size
        self.embed = QEmbedding(
            cfg.per_layer_vocab_size, layers * width, formats["ple.embed"], dtype
        )
        self.proj = QLinear(cfg.hidden_size, layers * width, formats["ple.proj"], dtype, False)
        self.norm = nn.RMSNorm(width, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)

    def forward(self, ids: nn.Tensor, embeds: nn.Tensor) -> nn.Tensor:
        cfg = self.cfg
        shape = (ids.shape[0], cfg.num_layers, cfg.per_layer_input_size)
        tokens = op.reshape(self.embed(ids), shape) * math.sqrt(cfg.per_layer_input_size)
        projected = op.reshape(self.proj(embeds) * (cfg.hidden_size**-0.5), shape)
        return (self.norm(projected) + tokens) * (2.0**-0.5)


class PerLayerGate(nn.Module):
    """One layer's use of its input: x + norm(out(act(gate(x)) * input))."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, dtype: str):
        width, hidden = cfg.per_layer_input_size, cfg.hidden_size
        self.act = ACTIVATIONS[cfg.hidden_act]
        self.gate = QLinear(hidden, width, formats[prefix + "gate"], dtype, False)
        self.out = QLinear(width, hidden, formats[prefix + "out"], dtype, False)
        self.post_norm = nn.RMSNorm(hidden, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)

    def forward(self, x: nn.Tensor, inputs: nn.Tensor) -> nn.Tensor:
        return x + self.post_norm(self.out(self.act(self.gate(x)) * inputs))
