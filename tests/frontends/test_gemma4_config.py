"""Gemma 4's config.json read into the shared decoder's per-layer options, against what
transformers' Gemma4TextConfig and its RoPE functions make of the same config: which layer's KV
cache each shared layer reads, each layer's head geometry, the global layers' proportional
RoPE frequencies; and the refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.lora.adapter import slot_shape
from mlcx.frontends.lora.layout import lora_layout
from mlcx.frontends.registry import for_hf
from mlcx.kernels.lora_layout import LoraSpec
from mlcx.kernels.rope_scaling import rope_table

GEMMA4 = for_hf("Gemma4ForCausalLM")
LOCAL, FULL = "sliding_attention", "full_attention"
KINDS = {
    "5:1": [LOCAL] * 5 + [FULL] + [LOCAL] * 5 + [FULL],
    "alternating": [LOCAL, FULL] * 4,
    "3:1": [LOCAL, LOCAL, LOCAL, FULL] * 3,
}


def _text_config(kinds: list[str], shared: int, **extra):
    from transformers import Gemma4TextConfig

    return Gemma4TextConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=len(kinds),
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        layer_types=kinds,
        num_kv_shared_layers=shared,
        max_position_embeddings=512,
        vocab_size_per_layer_input=256,
        **extra,
    )


@pytest.mark.parametrize("kinds", sorted(KINDS))
@pytest.mark.parametrize("shared", [0, 1, 3, 5])
def test_shared_layers_read_the_layer_transformers_stores(kinds, shared):
    text = _text_config(KINDS[kinds], shared)
    cfg = GEMMA4.config_from_hf(text.to_dict())
    modes = text.kv_sharing_modes
    stores = {text.layer_types[i]: i for i, mode in enumerate(modes) if mode == "store"}
    for i, mode in enumerate(modes):
        want = stores[text.layer_types[i]] if mode == "reuse" else i
        assert cfg.kv_source(i) == want
    assert len(cfg.kv_layers) == sum(mode != "reuse" for mode in modes)


@pytest.mark.parametrize("k_eq_v", [False, True])
def test_each_layers_head_geometry_is_transformers(k_eq_v):
    text = _text_config(
        KINDS["3:1"],
        3,
        global_head_dim=32,
        num_global_key_value_heads=1,
        attention_k_eq_v=k_eq_v,
        use_double_wide_mlp=True,
    )
    cfg = GEMMA4.config_from_hf(text.to_dict())
    for i in range(text.num_hidden_layers):
        layer = text.per_layer_config[i]
        assert (cfg.layer_head_dim(i), cfg.layer_kv_heads(i)) == (
            layer.head_dim,
            layer.num_key_value_heads,
        )
        wide = text.use_double_wide_mlp and text.kv_sharing_modes[i] == "reuse"
        assert cfg.layer_intermediate(i) == text.intermediate_size * (2 if wide else 1)
    owners_full = [i for i in cfg.full_attention_layers if cfg.owns_kv(i)]
    assert cfg.k_eq_v_layers == (tuple(owners_full) if k_eq_v else ())


@pytest.mark.parametrize("partial,factor", [(0.25, 1.0), (0.5, 1.0), (0.25, 8.0), (1.0, 1.0)])
def test_proportional_rope_is_transformers(partial, factor):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope = {"rope_type": "proportional", "partial_rotary_factor": partial, "rope_theta": 1e6}
    rope |= {"factor": factor}
    params = {FULL: rope, LOCAL: {"rope_type": "default", "rope_theta": 10000.0}}
    text = _text_config(KINDS["alternating"], 0, global_head_dim=64, rope_parameters=params)
    want, scale = ROPE_INIT_FUNCTIONS["proportional"](text, layer_type=FULL)
    cfg = GEMMA4.config_from_hf(text.to_dict())
    theta, scaling = cfg.layer_rope(1)
    table = rope_table(scaling, theta, cfg.layer_rope_dim(1))
    np.testing.assert_allclose(table.inv_freq, want.numpy(), rtol=1e-6)
    assert table.scale == scale
    assert cfg.layer_rope(0) == (10000.0, {})


@pytest.mark.parametrize(
    "extra,match",
    [
        ({"use_bidirectional_attention": "all"}, "encoder"),
        ({"per_layer_config": {"1": {"intermediate_size": 256}}}, "per_layer_config"),
    ],
)
def test_what_mlcx_cannot_compile_is_refused(extra, match):
    config = _text_config(KINDS["alternating"], 0).to_dict() | extra
    with pytest.raises(UnsupportedModelError, match=match):
        GEMMA4.config_from_hf(config)


@pytest.mark.parametrize(
    "sources,match",
    [
        ((0, 1, 2, 3, 4, 6, 6, 7), "earlier"),  # a layer reading a later one
        ((0, 1, 2, 3, 4, 5, 4, 6), "earlier"),  # reading a layer that reads another
        ((0, 1, 2, 3, 4, 5, 6, 6), "another attention kind"),
        ((0, 1, 2), "names 3 layers"),
    ],
)
def test_kv_sources_are_checked(sources, match):
    cfg = GEMMA4.config_from_hf(_text_config(KINDS["alternating"], 0).to_dict())
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(cfg, kv_sources=sources)


def test_adapters_fit_each_layer_and_slots_are_refused():
    """A LoRA pair fits each layer's own projection, as transformers builds it (merged at
    compile); adapter slots, one layout for every layer, are refused with what to do."""
    from transformers import Gemma4ForCausalLM

    text = _text_config(KINDS["3:1"], 3, global_head_dim=32, use_double_wide_mlp=True)
    cfg = GEMMA4.config_from_hf(text.to_dict())
    for i, layer in enumerate(Gemma4ForCausalLM(text).model.layers):
        assert slot_shape(cfg, "q", i) == tuple(layer.self_attn.q_proj.weight.shape)
        assert slot_shape(cfg, "o", i) == tuple(layer.self_attn.o_proj.weight.shape)
        assert slot_shape(cfg, "down", i) == tuple(layer.mlp.down_proj.weight.shape)
        if cfg.owns_kv(i):
            assert slot_shape(cfg, "k", i) == tuple(layer.self_attn.k_proj.weight.shape)
    with pytest.raises(UnsupportedModelError, match="mlcx compile --lora"):
        lora_layout(cfg, LoraSpec(2, 8), "float32")
