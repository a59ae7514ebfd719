"""The normalized description of a decoder-only transformer that the shared layers build.

Each architecture parses its own config format into this once, at the edge; everything past
that point trusts it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from mlcx.frontends.decoder_layers import LayerOptions
from mlcx.frontends.hybrid_config import check_hybrid
from mlcx.kernels.moe_options import GluActivation, MoEOptions
from mlcx.kernels.mrope import check_sections
from mlcx.kernels.rope_scaling import scaled_context

# The RMSNorms of a decoder layer, by layout (the norm parameters' names, in order):
# "pre": before attention and before the MLP (Llama); "sandwich": before and after each (Gemma:
# the output norms apply before the residual add); "post": after each, before the add (OLMo 2)
NORM_LAYOUTS: dict[str, tuple[str, ...]] = {
    "pre": ("attn_norm", "mlp_norm"),
    "sandwich": ("attn_norm", "attn_post_norm", "mlp_norm", "mlp_post_norm"),
    "post": ("attn_post_norm", "mlp_post_norm"),
}
# and with Gemma 4's experts beside the dense MLP: the MLP's output norm, the experts' input and
# output norms (the sum then takes mlp_post_norm)
DENSE_MOE_NORMS = ("dense_post_norm", "moe_norm", "moe_post_norm")


@dataclass(frozen=True)
class DecoderConfig(LayerOptions):
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    context_window: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] = field(default_factory=dict)
    # features of each q/k head that RoPE rotates, from the first on; the rest pass through
    # (Phi-4-mini's partial_rotary_factor). 0: the whole head (a value equal to head_dim
    # becomes 0, so configs of one model compare equal whichever file gave them)
    rotary_dim: int = 0
    tie_word_embeddings: bool = False
    norm_layout: str = "pre"  # NORM_LAYOUTS
    qkv_bias: bool = False
    o_bias: bool = False  # a bias on the attention's output projection (Llama attention_bias)
    qk_norm: bool = False  # RMSNorm over each q and k head before RoPE (Qwen3)
    # where qk_norm normalizes: "head" (each head's features) or "all" (the whole q and k
    # projections, OLMoE)
    qk_norm_scope: str = "head"
    # keys each query of a windowed layer sees, itself included (0: no window); every layer is
    # windowed except those in full_attention_layers
    sliding_window: int = 0
    full_attention_layers: tuple[int, ...] = ()
    # RoPE base of the windowed layers of a mixed local/global model (Gemma 3); 0: rope_theta
    local_rope_theta: float = 0.0
    hidden_act: str = "silu"  # of the gated MLP: silu (SwiGLU) or gelu_tanh (GeGLU)
    embed_scale: float = 1.0  # embeddings are multiplied by it (Gemma: sqrt(hidden_size))
    attn_scale: float = 0.0  # scores = q.k * attn_scale; 0: 1 / sqrt(head_dim)
    final_logit_softcap: float = 0.0  # logits = cap * tanh(logits / cap); 0: none
    attn_logit_softcap: float = 0.0  # attention scores, likewise (after the scale); 0: none
    residual_scale: float = 1.0  # each sub-block's output scaled before its residual add (Granite)
    logits_divisor: float = 1.0  # logits divided by it (Granite's logits_scaling)
    nope_layers: tuple[int, ...] = ()  # layers whose attention applies no RoPE (SmolLM3)
    # queries scaled by 1 + beta * log(1 + floor(position / period)) (Ministral 3's
    # llama_4_scaling_beta over its pretraining context); 0: none
    q_position_beta: float = 0.0
    q_position_period: int = 0
    # a learned logit per query head in each attention softmax's denominator (gpt-oss)
    attn_sinks: bool = False
    # mixture of experts (0 experts: a dense MLP in every layer); every layer's MLP is the MoE
    num_experts: int = 0
    experts_per_token: int = 0
    expert_intermediate_size: int = 0  # each expert's MLP width
    norm_topk_prob: bool = False  # the chosen experts' router weights renormalized to sum 1
    # per-layer options (mlcx.frontends.decoder_layers; Gemma 4): the full-attention layers'
    # head width and kv heads (0: as the others'); per layer, the layer whose KV pages it
    # attends over (empty: its own); layers whose values are their keys' projection; per-layer
    # MLP widths (empty: intermediate_size)
    global_head_dim: int = 0
    global_kv_heads: int = 0
    kv_sources: tuple[int, ...] = ()
    k_eq_v_layers: tuple[int, ...] = ()
    layer_intermediate_sizes: tuple[int, ...] = ()
    v_norm: bool = False  # values RMS-normalized (no weight) before they are stored (Gemma 4)
    # per-layer inputs (Gemma 4): each layer gates in a vector of this width, made from its own
    # embedding table (per_layer_vocab_size rows) and a projection of the embeddings
    per_layer_input_size: int = 0
    per_layer_vocab_size: int = 0
    layer_scalar: bool = False  # each layer's output times a learned scalar (Gemma 4)
    # Gemma 4's experts: beside the dense MLP (each output normed, then summed), routed from the
    # RMS-normalized residual times a learned scale / sqrt(hidden), outputs times a learned
    # scale per expert
    moe_dense_mlp: bool = False
    # M-RoPE (Qwen-VL, mlcx.kernels.mrope): feature pairs turned by the time, height and width
    # positions (empty: 1-D RoPE); the step functions then take 3-row rope positions
    mrope_sections: tuple[int, ...] = ()
    mrope_interleaved: bool = False  # Qwen3-VL's interleaved pairs, else contiguous runs
    # image rows carry this many more blocks of hidden_size features, block i added to the
    # image tokens' hidden states after layer i (Qwen3-VL's deepstack)
    deepstack_layers: int = 0
    # the MoE's routing and experts beyond a softmax router over SwiGLU experts, as plain fields
    # of mlcx.kernels.moe_options.MoEOptions (moe_options), so the config stays JSON
    router_bias: bool = False  # a bias on the router's logits
    topk_softmax: bool = False  # the top k logits, then a softmax over those k (gpt-oss)
    expert_bias: bool = False  # a bias on every expert's gate/up and down rows
    # the experts' gated activation: (clip(up) + glu_up_shift) * g * sigmoid(glu_alpha * g),
    # g = min(gate, glu_limit), up clipped to +-glu_limit (0: no clamps); 1, 0, 0 is SwiGLU
    glu_alpha: float = 1.0
    glu_limit: float = 0.0
    glu_up_shift: float = 0.0
    # hybrid models: each layer's kind, attention or a state layer's (hybrid_config.LAYER_KINDS:
    # a Gated DeltaNet, a short convolution); empty: every layer attends
    layer_kinds: tuple[str, ...] = ()
    # Gated DeltaNet layers: q/k heads, v heads, their widths, the conv's taps, and which k head
    # a v head reads (mlcx.kernels.hybrid.shapes.HEAD_ORDERS; llama.cpp's files tile v heads)
    delta_k_heads: int = 0
    delta_v_heads: int = 0
    delta_k_dim: int = 0
    delta_v_dim: int = 0
    delta_conv_kernel: int = 0
    delta_head_order: str = "grouped"
    conv_kernel: int = 0  # short convolution layers' taps (LFM2)
    conv_bias: bool = False  # biases on their projections and taps
    # attention output times sigmoid(gate), each q head followed by its gate's (Qwen3.5)
    attn_output_gate: bool = False
    # a shared expert beside the routed ones, scaled by sigmoid(x . w) (Qwen3.5-MoE); 0: none
    shared_expert_size: int = 0

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "context_window",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"model config: {name} must be a positive integer, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"model config: num_attention_heads ({self.num_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_kv_heads})"
            )
        if self.head_dim % 2:
            raise ValueError(f"model config: head_dim must be even for RoPE, got {self.head_dim}")
        if not self.rms_norm_eps > 0 or not self.rope_theta > 0:
            raise ValueError("model config: rms_norm_eps and rope_theta must be positive")
        self._check_rotary()
        self._check_layer_options()
        self._check_experts()
        self._check_multimodal()
        object.__setattr__(self, "layer_kinds", tuple(self.layer_kinds))
        check_hybrid(self)
        self._check_layer_geometry()

    def _check_rotary(self) -> None:
        dim = self.rotary_dim
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ValueError(f"model config: rotary_dim must be an integer, got {dim!r}")
        if dim < 0 or dim % 2 or dim > self.head_dim:
            raise ValueError(
                f"model config: RoPE rotates pairs of features, so the rotary dimension must be "
                f"even and at most head_dim ({self.head_dim}), got {dim}; check "
                "partial_rotary_factor (or the GGUF's rope.dimension_count)"
            )
        if dim == self.head_dim:
            object.__setattr__(self, "rotary_dim", 0)
        pairs = self.rope_dim // 2
        for name in ("short_factor", "long_factor", "factors"):
            factors = self.rope_scaling.get(name)
            if factors is not None and len(factors) != pairs:
                raise ValueError(
                    f"model config: RoPE {name} has {len(factors)} entries, but the rotary "
                    f"dimension {self.rope_dim} has {pairs} feature pairs; the checkpoint's "
                    "rope_scaling and partial_rotary_factor disagree"
                )

    def _check_multimodal(self) -> None:
        object.__setattr__(self, "mrope_sections", tuple(self.mrope_sections))
        if self.mrope_sections:
            check_sections(self.mrope_sections, self.rope_dim)
        if not 0 <= self.deepstack_layers <= self.num_layers:
            raise ValueError(
                f"model config: deepstack_layers {self.deepstack_layers} is not 0..layers"
            )

    @property
    def rope_dim(self) -> int:
        """The features of each head that RoPE rotates (the first rope_dim)."""
        return self.rotary_dim or self.head_dim

    def _check_experts(self) -> None:
        if self.qk_norm_scope not in ("head", "all"):
            raise ValueError(f"model config: qk_norm_scope {self.qk_norm_scope!r} is not head/all")
        if self.num_experts == 0:
            if self.moe_dense_mlp:
                raise ValueError("model config: moe_dense_mlp needs experts")
            return
        if not 0 < self.experts_per_token <= self.num_experts:
            raise ValueError(
                f"model config: experts per token ({self.experts_per_token}) must be between 1 "
                f"and the number of experts ({self.num_experts})"
            )
        if self.expert_intermediate_size <= 0:
            raise ValueError("model config: an MoE needs a positive expert intermediate size")
        try:
            options = self.moe_options
        except ValueError as err:
            raise ValueError(f"model config: {err}") from None
        if not options.glu.plain and self.hidden_act != "silu":
            raise ValueError("model config: a clamped or scaled SwiGLU needs hidden_act silu")

    @property
    def moe_options(self) -> MoEOptions:
        """The MoE's routing and expert options, validated (MoEOptions)."""
        glu = GluActivation(self.glu_alpha, self.glu_limit or None, self.glu_up_shift)
        scoring = "topk_softmax" if self.topk_softmax else "softmax"
        return MoEOptions(self.router_bias, scoring, self.norm_topk_prob, self.expert_bias, glu)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def layer_norms(self) -> tuple[str, ...]:
        """The names of each layer's RMSNorms (NORM_LAYOUTS, DENSE_MOE_NORMS)."""
        return NORM_LAYOUTS[self.norm_layout] + (DENSE_MOE_NORMS if self.moe_dense_mlp else ())

    def _check_layer_options(self) -> None:
        # JSON gives a list back; the config stays hashable and comparable as a tuple
        object.__setattr__(self, "full_attention_layers", tuple(self.full_attention_layers))
        if not isinstance(self.sliding_window, int) or self.sliding_window < 0:
            raise ValueError(
                f"model config: sliding_window must be a non-negative integer (0: none), "
                f"got {self.sliding_window!r}"
            )
        if self.norm_layout not in NORM_LAYOUTS:
            raise ValueError(
                f"model config: norm_layout {self.norm_layout!r} is not one of "
                f"{', '.join(NORM_LAYOUTS)}"
            )
        if self.hidden_act not in ("silu", "gelu_tanh"):
            raise ValueError(
                f"model config: hidden_act {self.hidden_act!r} is not silu or gelu_tanh"
            )
        caps = (self.final_logit_softcap, self.attn_logit_softcap)
        if self.embed_scale <= 0 or self.attn_scale < 0 or min(caps) < 0:
            raise ValueError("model config: embed_scale, attn_scale and softcaps must be positive")
        if self.residual_scale <= 0 or self.logits_divisor <= 0:
            raise ValueError("model config: residual_scale and logits_divisor must be positive")
        if self.q_position_beta < 0 or (self.q_position_beta and self.q_position_period <= 0):
            raise ValueError(
                "model config: a query position scale needs beta >= 0 and a positive period"
            )
        for name in ("nope_layers", "kv_sources", "k_eq_v_layers", "layer_intermediate_sizes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("full_attention_layers", "nope_layers"):
            bad = [i for i in getattr(self, name) if not 0 <= i < self.num_layers]
            if bad:
                raise ValueError(f"model config: {name} {bad} are not layers")

    @property
    def max_context_window(self) -> int:
        """The most tokens the model may be compiled for: its context window, or the context
        a llama3 or YaRN scaling stretches the pretraining one to where that is longer (Qwen's
        configs keep the pretraining length in max_position_embeddings)."""
        return max(self.context_window, scaled_context(self.rope_scaling))

    @property
    def kv_window(self) -> int:
        """The window every layer shares, so KV pages before it may be released; 0 where
        some layer attends to every key (mixed local/global models keep all pages)."""
        return 0 if self.full_attention_layers else self.sliding_window

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecoderConfig:
        return cls(**data)
