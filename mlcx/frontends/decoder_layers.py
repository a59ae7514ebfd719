"""What differs between the layers of one decoder: its kind (attention or a hybrid's state
layer), RoPE and window, head geometry, whose KV pages each reads, MLP widths (DecoderConfig's
per-layer options, read and checked here).

Gemma 4 gives its full-attention layers their own head width and kv-head count, lets its last
layers attend over an earlier layer's pages (computing no keys or values of their own, so they
own no pages), and doubles those layers' MLP. A layer that owns pages is a KV layer; the
compiled step functions take one page tensor per KV layer, in layer order (`kv_layers`); a
hybrid's state layers own state tensors instead (mlcx.frontends.hybrid_config).
"""

from __future__ import annotations

from typing import Any

from mlcx.frontends.hybrid_config import ATTENTION


class LayerOptions:
    """Per-layer reads of DecoderConfig's fields (mixed into it)."""

    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rotary_dim: int
    rope_theta: float
    rope_scaling: dict[str, Any]
    local_rope_theta: float
    sliding_window: int
    full_attention_layers: tuple[int, ...]
    layer_kinds: tuple[str, ...]
    global_head_dim: int
    global_kv_heads: int
    kv_sources: tuple[int, ...]
    k_eq_v_layers: tuple[int, ...]
    layer_intermediate_sizes: tuple[int, ...]
    per_layer_input_size: int
    per_layer_vocab_size: int

    def layer_kind(self, layer: int) -> str:
        return self.layer_kinds[layer] if self.layer_kinds else ATTENTION

    @property
    def state_layers(self) -> tuple[int, ...]:
        """The layers that keep a per-sequence state instead of KV pages."""
        return tuple(i for i in range(self.num_layers) if self.layer_kind(i) != ATTENTION)

    def layer_rope(self, layer: int) -> tuple[float, dict[str, Any]]:
        """(theta, scaling) of `layer`'s RoPE: local layers of a mixed model have their own
        base and no scaling."""
        if self.local_rope_theta and not self._is_global(layer):
            return self.local_rope_theta, {}
        return self.rope_theta, self.rope_scaling

    def layer_window(self, layer: int) -> int:
        """The sliding window of `layer`'s attention; 0 where it sees every earlier key."""
        return 0 if self._is_global(layer) else self.sliding_window

    def _is_global(self, layer: int) -> bool:
        return layer in self.full_attention_layers

    def layer_head_dim(self, layer: int) -> int:
        if self.global_head_dim and self._is_global(layer):
            return self.global_head_dim
        return self.head_dim

    def layer_kv_heads(self, layer: int) -> int:
        if self.global_kv_heads and self._is_global(layer):
            return self.global_kv_heads
        return self.num_kv_heads

    def layer_rope_dim(self, layer: int) -> int:
        """The features of `layer`'s heads RoPE turns: rotary_dim of the common head width; a
        global head of its own width turns whole (its RoPE scaling says which pairs move)."""
        if self.layer_head_dim(layer) != self.head_dim:
            return self.layer_head_dim(layer)
        return self.rotary_dim or self.head_dim

    def kv_source(self, layer: int) -> int:
        """The layer whose KV pages `layer` attends over (itself, unless it shares)."""
        return self.kv_sources[layer] if self.kv_sources else layer

    def owns_kv(self, layer: int) -> bool:
        """Whether `layer` is an attention layer with KV pages of its own."""
        return self.kv_source(layer) == layer and self.layer_kind(layer) == ATTENTION

    @property
    def kv_layers(self) -> tuple[int, ...]:
        """The layers that own KV pages, in order: one page tensor each."""
        return tuple(i for i in range(self.num_layers) if self.owns_kv(i))

    def layer_intermediate(self, layer: int) -> int:
        if self.layer_intermediate_sizes:
            return self.layer_intermediate_sizes[layer]
        return self.intermediate_size

    @property
    def uniform_layers(self) -> bool:
        """Whether every layer has the same projections (one LoRA layout fits them all)."""
        return not (
            self.global_head_dim
            or self.global_kv_heads
            or self.kv_sources
            or self.k_eq_v_layers
            or self.layer_intermediate_sizes
        )

    def _check_layer_geometry(self) -> None:
        for name in ("global_head_dim", "global_kv_heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"model config: {name} must be an integer >= 0, got {value!r}")
        if self.global_head_dim % 2:
            raise ValueError(
                f"model config: global_head_dim must be even for RoPE, got {self.global_head_dim}"
            )
        if self.global_kv_heads and self.num_heads % self.global_kv_heads:
            raise ValueError(
                f"model config: num_attention_heads ({self.num_heads}) must be a multiple of "
                f"the global layers' kv heads ({self.global_kv_heads})"
            )
        self._check_sources()
        sizes = self.layer_intermediate_sizes
        if sizes and (len(sizes) != self.num_layers or min(sizes) <= 0):
            raise ValueError(
                f"model config: layer_intermediate_sizes needs a positive width for each of "
                f"the {self.num_layers} layers, got {list(sizes)}"
            )
        bad = [i for i in self.k_eq_v_layers if not 0 <= i < self.num_layers]
        if bad:
            raise ValueError(f"model config: k_eq_v_layers {bad} are not layers")
        if self.per_layer_input_size < 0 or self.per_layer_vocab_size < 0:
            raise ValueError("model config: per-layer input sizes must be >= 0")
        if self.per_layer_input_size and not self.per_layer_vocab_size:
            raise ValueError("model config: per-layer inputs need their vocabulary size")

    def _check_sources(self) -> None:
        sources = self.kv_sources
        if not sources:
            return
        if len(sources) != self.num_layers:
            raise ValueError(
                f"model config: kv_sources names {len(sources)} layers, the model has "
                f"{self.num_layers}"
            )
        for layer, source in enumerate(sources):
            attends = self.layer_kind(layer) == self.layer_kind(source) == ATTENTION
            if not 0 <= source <= layer or sources[source] != source or not attends:
                raise ValueError(
                    f"model config: layer {layer} reads the KV pages of layer {source}, which "
                    "must be an earlier (or the same) attention layer owning its pages"
                )
            if self._is_global(layer) != self._is_global(source):
                raise ValueError(
                    f"model config: layer {layer} reads the KV pages of layer {source}, a layer "
                    "of another attention kind (sliding window or full)"
                )
