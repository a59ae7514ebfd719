"""The WeightSpecs of the shared decoder for a config, from a family's weight-name table.

What the decoder holds follows from the config alone (its norms by `norm_layout`, biases, q/k
norms, attention or a state layer's mixer, a dense MLP and/or experts, per-layer inputs, a tied
head); where each piece comes from is the table's (mlcx.frontends.weight_names). A fused slot
(`qkv`, `gate_up`) in the table is read as one tensor, else its parts are concatenated by
rows. A layer reading another's KV pages holds only its query projection; one whose values are
its keys, no value projection.
"""

from __future__ import annotations

import numpy as np

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.permute import unpermute_rows
from mlcx.frontends.state_weights import STATE_SPECS, shared_expert_specs
from mlcx.frontends.weight_names import WeightNames
from mlcx.frontends.weight_spec import RowTransform, WeightSpec
from mlcx.quantization.schemes import Role


def experts_gate_up_rows(experts: int) -> RowTransform:
    """Each expert's gate rows then its up rows (one fused tensor stacked over experts) to
    every expert's gate rows, then every expert's up rows (mlcx.kernels.moe's layout); raw
    block rows alike."""

    def apply(rows):
        return rows.reshape(experts, 2, -1, *rows.shape[1:]).swapaxes(0, 1).reshape(rows.shape)

    return apply


class _Layer:
    """The specs of one layer, read from `names` at layer `i` (destination `layers.i.`)."""

    def __init__(self, cfg: DecoderConfig, names: WeightNames, i: int):
        self.cfg, self.names, self.i, self.dst = cfg, names, i, f"layers.{i}."

    def src(self, *slots: str) -> tuple[str, ...]:
        return tuple(self.names.name(s, self.i) for s in slots)

    def vector(self, target: str, slot: str, transform: RowTransform | None = None):
        norm = self.names.norm_transform if slot.endswith("norm") else None
        transforms = (transform or norm,) if (transform or norm) else ()
        return WeightSpec(self.dst + target, Role.VECTOR, self.src(slot), transforms)

    def linear(self, target: str, *slots: str, transforms=()) -> WeightSpec:
        return WeightSpec(self.dst + target, Role.LINEAR, self.src(*slots), transforms)

    def specs(self) -> list[WeightSpec]:
        cfg = self.cfg
        specs = [self.vector(f"{n}.weight", n) for n in cfg.layer_norms]
        specs += STATE_SPECS.get(cfg.layer_kind(self.i), _Layer._attention)(self)
        if not cfg.is_moe or cfg.moe_dense_mlp:
            specs += self._mlp()
        if cfg.is_moe:
            specs += self._experts()
        if cfg.per_layer_input_size:
            specs += [self.linear("ple.gate", "ple_gate"), self.linear("ple.out", "ple_out")]
            specs.append(self.vector("ple.post_norm.weight", "ple_post_norm"))
        if cfg.layer_scalar:
            specs.append(self.vector("layer_scalar", "layer_scalar"))
        return specs

    def _rope_rows(self, slots: tuple[str, ...]) -> tuple[RowTransform | None, ...]:
        if not self.names.rope_permuted:
            return ()
        heads = {"q": self.cfg.num_heads, "k": self.cfg.layer_kv_heads(self.i)}
        return tuple(unpermute_rows(heads[s]) if s in heads else None for s in slots)

    def _attention(self) -> list[WeightSpec]:
        cfg, names, i = self.cfg, self.names, self.i
        fused = names.has("qkv")
        owns = cfg.owns_kv(i)
        slots = ("q", "k", "v") if owns else ("q",)
        if i in cfg.k_eq_v_layers and owns:
            slots = ("q", "k")
        rope = () if fused else self._rope_rows(slots)
        specs = [self.linear("attn.qkv", *(("qkv",) if fused else slots), transforms=rope)]
        if cfg.qkv_bias:
            bias = ("qkv_bias",) if fused else tuple(f"{s}_bias" for s in slots)
            specs.append(WeightSpec(self.dst + "attn.qkv.bias", Role.VECTOR, self.src(*bias), rope))
        specs.append(self.linear("attn.o", "o"))
        if cfg.o_bias:
            specs.append(self.vector("attn.o.bias", "o_bias"))
        if cfg.qk_norm:
            specs += [self.vector(f"attn.{p}_norm.weight", f"{p}_norm") for p in "qk"[: len(slots)]]
        if cfg.attn_sinks:
            specs.append(self.vector("attn.sinks", "sinks"))
        return specs

    def _mlp(self) -> list[WeightSpec]:
        gate_up = ("gate_up",) if self.names.has("gate_up") else ("gate", "up")
        return [self.linear("mlp.gate_up", *gate_up), self.linear("mlp.down", "down")]

    def _experts(self) -> list[WeightSpec]:
        names, i, options = self.names, self.i, self.cfg.moe_options
        experts = range(1 if names.stacked("expert_down") else self.cfg.num_experts)

        def each(*slots: str) -> tuple[str, ...]:
            return tuple(names.name(slot, i, e) for slot in slots for e in experts)

        def biases(target: str, *slots: str) -> list[WeightSpec]:
            if not options.expert_bias:
                return []
            sources = each(*slots)  # [experts, rows] where stacked: one value per stacked row
            flat = (_flat,) * len(sources)
            return [WeightSpec(self.dst + target, Role.VECTOR, sources, flat)]

        # dense (VECTOR role: the activation dtype, never quantized; llama.cpp keeps the
        # router in float too: top-k choices are sensitive to rounding)
        specs = [WeightSpec(self.dst + "moe.router", Role.VECTOR, self.src("router"))]
        if options.router_bias:
            specs.append(self.vector("moe.router_bias", "router_bias"))
        if self.cfg.moe_dense_mlp:  # Gemma 4's
            specs.append(self.vector("moe.router_norm.weight", "router_scale"))
            specs.append(self.vector("moe.expert_scale", "expert_scale"))
        return [
            *specs,
            self._experts_gate_up(each),
            WeightSpec(self.dst + "moe.down", Role.LINEAR, each("expert_down")),
            *biases("moe.gate_up_bias", "expert_gate_bias", "expert_up_bias"),
            *biases("moe.down_bias", "expert_down_bias"),
            *(shared_expert_specs(self) if self.cfg.shared_expert_size else ()),
        ]

    def _experts_gate_up(self, each) -> WeightSpec:
        """Every expert's gate rows, then every expert's up rows (mlcx.kernels.moe's layout),
        from one fused tensor (each expert's gate then up rows) where the table has one."""
        target, experts = self.dst + "moe.gate_up", self.cfg.num_experts
        if self.names.has("expert_gate_up"):
            fused = (experts_gate_up_rows(experts),)
            return WeightSpec(target, Role.LINEAR, self.src("expert_gate_up"), fused)
        return WeightSpec(target, Role.LINEAR, each("expert_gate", "expert_up"))


def _model_specs(cfg: DecoderConfig, names: WeightNames, norm) -> list[WeightSpec]:
    """What the model holds outside its layers: the embeddings, per-layer inputs."""
    specs = [WeightSpec("embed", Role.EMBEDDING, (names.name("embed"),))]
    if cfg.per_layer_input_size:
        specs += [
            WeightSpec("ple.embed", Role.EMBEDDING, (names.name("ple_embed"),)),
            WeightSpec("ple.proj", Role.LINEAR, (names.name("ple_proj"),)),
            WeightSpec("ple.norm.weight", Role.VECTOR, (names.name("ple_norm"),), norm),
        ]
    return specs


def _flat(rows: np.ndarray) -> np.ndarray:
    return rows.reshape(-1)


def decoder_weights(cfg: DecoderConfig, names: WeightNames) -> list[WeightSpec]:
    norm = (names.norm_transform,) if names.norm_transform else ()
    specs = _model_specs(cfg, names, norm)
    for i in range(cfg.num_layers):
        specs += _Layer(cfg, names, i).specs()
    specs.append(WeightSpec("norm.weight", Role.VECTOR, (names.name("norm"),), norm))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, (names.name("lm_head"),)))
    return specs
