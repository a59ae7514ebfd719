"""Each RoPE scaling read from a Hugging Face config gives the inverse frequencies and cos/sin
scale transformers computes for it (its ROPE_INIT_FUNCTIONS, the reference), and the scaled
context a llama3 or YaRN config allows."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.kernels.rope_scaling import rope_for_context, rope_table, scaled_context

HEAD_DIM = 64
CASES = {
    "linear": {"rope_type": "linear", "factor": 4.0},
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 32,
    },
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32},
    "yarn-betas-untruncated": {
        "rope_type": "yarn",
        "factor": 8.0,
        "original_max_position_embeddings": 64,
        "beta_fast": 16.0,
        "beta_slow": 2.0,
        "truncate": False,
    },
    "yarn-mscale": {
        "rope_type": "yarn",
        "factor": 40.0,
        "original_max_position_embeddings": 64,
        "mscale": 1.0,
        "mscale_all_dim": 0.707,
    },
    "yarn-attention-factor": {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 32,
        "attention_factor": 1.5,
    },
}


def _hf_config(params: dict, max_positions: int = 256):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=HEAD_DIM * 4,
        num_attention_heads=4,
        max_position_embeddings=max_positions,
        rope_parameters={"rope_theta": 10000.0, **params},
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_tables_equal_transformers(case):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = _hf_config(CASES[case])
    want_inv, want_scale = ROPE_INIT_FUNCTIONS[CASES[case]["rope_type"]](config, "cpu")
    theta, scaling = HFConfigReader(config.to_dict(), "llama").rope()
    table = rope_table(scaling, theta, HEAD_DIM)
    np.testing.assert_allclose(table.inv_freq, want_inv.numpy(), rtol=1e-6)
    assert table.scale == pytest.approx(want_scale, rel=1e-6)


def test_longrope_resolves_to_per_pair_factors():
    scaling = {
        "rope_type": "longrope",
        "short_factor": [1.0] * 4,
        "long_factor": [1.0, 2.0, 3.0, 4.0],
        "original_max_position_embeddings": 32,
        "attention_factor": 1.2,
    }
    table = rope_table(rope_for_context(scaling, 64), 10000.0, 8)
    inv = 1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8)
    np.testing.assert_allclose(table.inv_freq, inv / [1.0, 2.0, 3.0, 4.0])
    assert table.scale == 1.2


def test_scaled_context_is_original_times_factor_for_yarn_only():
    _, yarn = HFConfigReader(_hf_config(CASES["yarn"], 32).to_dict(), "qwen2").rope()
    _, llama3 = HFConfigReader(_hf_config(CASES["llama3"]).to_dict(), "llama").rope()
    assert scaled_context(yarn) == 128
    # llama3's config states its maximum (Llama 3.2: 131072, not 32 x 8192)
    assert scaled_context(llama3) == 0
    assert scaled_context({"rope_type": "linear", "factor": 4.0}) == 0


def test_a_llama3_config_without_its_factors_is_refused():
    config = {"rope_theta": 5e5, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    with pytest.raises(UnsupportedModelError, match="low_freq_factor"):
        HFConfigReader(config, "llama").rope()
