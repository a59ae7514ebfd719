"""A decoder-only language model with state layers (a hybrid: Qwen3.5, LFM2), with the entry
points of the state-cache contract (mlcx.kernels.step_params):

- prefill(input_ids, the page tables, state_slots, logit_positions, kv_pages, states, params)
  and decode(input_ids, the page tables, state_slots, kv_pages, states, params), updating the
  pages of the attention layers and the state tensors of the state layers in place;
- copy_pages(kv_pages, pairs) and copy_states(states, pairs [n, 2]): state rows src -> dst.

`kv_pages` holds one page tensor per attention layer, `states` each state layer's tensors in
layer order (mlcx.frontends.hybrid_config.layer_states), every one with the slot axis first.
"""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import spec

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.hybrid_config import layer_states, state_tensors
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.causal_lm import CausalLM, _StepMethod
from mlcx.kernels.attention import PagedKVOps
from mlcx.kernels.hybrid.ops import StateStep
from mlcx.kernels.hybrid.params import SLOTS
from mlcx.kernels.step_params import (
    COPY_PAGES,
    COPY_STATES,
    DECODE,
    KV_PAGES,
    PREFILL,
    STATE_SLOTS,
    STATES,
    step_params,
)


class HybridLM(CausalLM):
    def __init__(self, cfg: DecoderConfig, formats: Formats, kv: PagedKVOps):
        super().__init__(cfg, formats, kv)
        dtype = kv.layout.dtype
        self.state_layers = set(cfg.state_layers)
        # how many state tensors each layer takes (0: an attention layer, its pages instead)
        self.state_counts = [
            len(layer_states(cfg, i, dtype)) if i in self.state_layers else 0
            for i in range(cfg.num_layers)
        ]

    def state_tensors(self) -> list[dict]:
        """The artifact's record of the state tensors (mlcx.artifact.state_tensors)."""
        return state_tensors(self.cfg, self.kv.layout.dtype)

    def _caches(self, args: dict[str, nn.Tensor]) -> dict:
        caches: dict = dict(zip(self.cfg.kv_layers, args[KV_PAGES], strict=True))
        states = list(args[STATES])
        for i in self.cfg.state_layers:
            count = self.state_counts[i]
            caches[i], states = tuple(states[:count]), states[count:]
        return caches

    def _state_step(self, args: dict[str, nn.Tensor]) -> StateStep:
        return StateStep(args["positions"], args["q_indptr"], args[STATE_SLOTS])

    def _outputs(self, caches: dict) -> tuple:
        pages = tuple(caches[i] for i in self.cfg.kv_layers)
        states = tuple(t for i in self.cfg.state_layers for t in caches[i])
        return pages, states

    prefill = _StepMethod(PREFILL, states=True)
    decode = _StepMethod(DECODE, states=True)

    def copy_states(self, states, pairs):
        return tuple(self.state_ops.copy_states(state, pairs) for state in states)

    def export_spec(self) -> dict:
        dtype, kv = self.kv.layout.dtype, self._kv_specs()
        states = [
            spec.Tensor((SLOTS, *shape), kind)
            for i in sorted(self.state_layers)
            for _, shape, kind in layer_states(self.cfg, i, dtype)
        ]
        packed = {"param_mode": "packed", "effect_mode": "none"}
        steps = {
            name: {
                **{p: self._param_spec(p) for p in step_params(name, states=True)},
                KV_PAGES: kv,
                STATES: states,
                "$": packed,
            }
            for name in (PREFILL, DECODE)
        }
        pairs = spec.Tensor(["num_copies", 2], "int32")
        plain = {"param_mode": "none", "effect_mode": "none"}
        return {
            **steps,
            COPY_PAGES: {KV_PAGES: kv, "pairs": pairs, "$": plain},
            COPY_STATES: {STATES: states, "pairs": pairs, "$": plain},
        }


def decoder_model(
    cfg: DecoderConfig, formats: Formats, kv: PagedKVOps, images: bool, lora=None
) -> nn.Module:
    """The shared decoder for `cfg`: a HybridLM where it has state layers. `lora`: adapter
    slots (mlcx.kernels.lora_layout.LoraLayout), for models without state layers."""
    if not cfg.state_layers:
        return CausalLM(cfg, formats, kv, images=images, lora=lora)
    if images:
        raise ValueError("image inputs are not implemented for hybrid models")
    if lora is not None:
        raise ValueError(
            "LoRA adapter slots are not implemented for hybrid models (state layers); "
            "merge the adapter at compile time (`mlcx compile --lora`) instead"
        )
    return HybridLM(cfg, formats, kv)
