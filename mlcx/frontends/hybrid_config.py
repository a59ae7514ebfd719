"""The layer kinds of a hybrid decoder, and the checks and kernel shapes of their options
(DecoderConfig's layer_kinds, delta_*, conv_* fields).

A hybrid model mixes attention layers (KV pages) with state layers, which keep a fixed-size
state per sequence instead (mlcx.kernels.hybrid): Gated DeltaNet layers (Qwen3.5: a short
convolution over q|k|v, then the gated delta rule) and short convolution layers (LFM2).
"""

from __future__ import annotations

from typing import Any

from mlcx.kernels.hybrid.shapes import HEAD_ORDERS, ConvShape, DeltaShape

ATTENTION = "attention"
DELTA = "delta"  # Gated DeltaNet
CONV = "conv"  # short convolution
LAYER_KINDS = (ATTENTION, DELTA, CONV)


def _count(cfg: Any, kind: str) -> int:
    return sum(k == kind for k in cfg.layer_kinds)


def check_hybrid(cfg: Any) -> None:
    """ValueError naming the option where a DecoderConfig's hybrid options disagree."""
    kinds = cfg.layer_kinds
    if kinds and len(kinds) != cfg.num_layers:
        raise ValueError(
            f"model config: {len(kinds)} layer kinds for {cfg.num_layers} layers; the layer "
            "types of config.json (or the GGUF's) must name every layer"
        )
    unknown = sorted(set(kinds) - set(LAYER_KINDS))
    if unknown:
        raise ValueError(f"model config: layer kinds {unknown} are not among {LAYER_KINDS}")
    if kinds and not _count(cfg, ATTENTION):
        raise ValueError("model config: a hybrid model needs at least one attention layer")
    if _count(cfg, DELTA):
        delta_shape(cfg, "float32")  # DeltaShape and ConvShape validate the geometry
    if cfg.delta_head_order not in HEAD_ORDERS:
        raise ValueError(f"model config: delta_head_order must be one of {HEAD_ORDERS}")
    if _count(cfg, CONV):
        conv_shape(cfg, "float32")
    if cfg.shared_expert_size < 0 or (cfg.shared_expert_size and not cfg.num_experts):
        raise ValueError("model config: a shared expert needs routed experts and a positive size")


def delta_shape(cfg: Any, dtype: str) -> DeltaShape:
    """The delta rule's geometry of the config's Gated DeltaNet layers."""
    heads = (cfg.delta_k_heads, cfg.delta_v_heads, cfg.delta_k_dim, cfg.delta_v_dim)
    if min(heads) <= 0:
        raise ValueError(
            "model config: Gated DeltaNet layers need positive linear key/value head counts "
            f"and head dims, got {heads} (linear_num_key_heads, linear_num_value_heads, "
            "linear_key_head_dim, linear_value_head_dim)"
        )
    shape = DeltaShape(*heads, dtype, cfg.delta_head_order)
    ConvShape(shape.width, cfg.delta_conv_kernel, dtype)  # the taps, checked here too
    return shape


def delta_conv_shape(cfg: Any, dtype: str) -> ConvShape:
    """The convolution in front of the delta rule: over q|k|v, then SiLU."""
    width = delta_shape(cfg, dtype).width
    return ConvShape(width, cfg.delta_conv_kernel, dtype, activation="silu")


def conv_shape(cfg: Any, dtype: str) -> ConvShape:
    """A short convolution layer's: over the hidden features, no activation."""
    return ConvShape(cfg.hidden_size, cfg.conv_kernel, dtype, bias=cfg.conv_bias)


def layer_states(cfg: Any, layer: int, dtype: str) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape of one slot, dtype) of a state layer's tensors, in the order its step
    functions take them: conv windows in the activation dtype `dtype`, the delta rule's
    recurrent state in float32."""
    if cfg.layer_kind(layer) == DELTA:
        shapes = [("conv", delta_conv_shape(cfg, dtype)), ("recurrent", delta_shape(cfg, dtype))]
    else:
        shapes = [("conv", conv_shape(cfg, dtype))]
    return [(name, *shape.state()) for name, shape in shapes]


def state_tensors(cfg: Any, dtype: str) -> list[dict[str, Any]]:
    """Every state layer's tensors in the step functions' order, as the artifact records them
    (mlcx.artifact.state_tensors)."""
    return [
        {"layer": layer, "name": name, "shape": list(shape), "dtype": kind}
        for layer in cfg.state_layers
        for name, shape, kind in layer_states(cfg, layer, dtype)
    ]
