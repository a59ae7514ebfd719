"""The RoPE scaling of a GGUF's metadata and rope_freqs tensor: YaRN as the HF config it was
converted from reads, and what mlcx cannot apply refused with the key that names it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.gguf.rope import gguf_rope_scaling
from mlcx.frontends.hf_config import HFConfigReader

HEAD_DIM = 16


class _Checkpoint:
    """What gguf_rope_scaling reads of a GGUFCheckpoint: `qwen2.*` metadata and tensors."""

    path, architecture = "tiny.gguf", "qwen2"

    def __init__(self, meta: dict, tensors: dict | None = None):
        self.meta, self.tensors = meta, tensors or {}

    def arch_meta(self, key: str, default=None):
        return self.meta.get(key, default)

    def names(self) -> list[str]:
        return list(self.tensors)

    def get(self, name: str):
        return SimpleNamespace(to_float=lambda: self.tensors[name])


YARN = {
    "context_length": 32,
    "rope.scaling.type": "yarn",
    "rope.scaling.factor": 4.0,
    "rope.scaling.original_context_length": 32,
}


def test_yarn_reads_as_its_hf_config():
    hf = {"max_position_embeddings": 32, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    assert gguf_rope_scaling(_Checkpoint(YARN), HEAD_DIM) == HFConfigReader(hf, "qwen2").rope()[1]


def test_yarn_log_multiplier_is_hf_mscale_all_dim_with_mscale_one():
    """llama.cpp's converter keeps mscale_all_dim as yarn_log_multiplier and llama.cpp takes
    mscale as 1 (Ministral 3 and DeepSeek configs): the same as transformers' YaRN."""
    scaling = {"rope_type": "yarn", "factor": 4.0, "mscale": 1.0, "mscale_all_dim": 0.7}
    hf = {"max_position_embeddings": 32, "rope_scaling": scaling}
    meta = {**YARN, "rope.scaling.yarn_log_multiplier": 0.7}
    got = gguf_rope_scaling(_Checkpoint(meta), HEAD_DIM)
    assert got == HFConfigReader(hf, "qwen2").rope()[1]


def test_rope_freqs_become_per_pair_factors():
    factors = np.linspace(1.0, 8.0, HEAD_DIM // 2, dtype=np.float32)
    got = gguf_rope_scaling(_Checkpoint({}, {"rope_freqs.weight": factors}), HEAD_DIM)
    assert got == {"rope_type": "freq_factors", "factors": factors.tolist()}


@pytest.mark.parametrize(
    ("meta", "tensors", "match"),
    [
        ({**YARN, "rope.scaling.yarn_ext_factor": 0.5}, {}, "yarn_ext_factor"),
        ({"rope.scaling.type": "longrope"}, {}, "supported: none, linear, yarn"),
        (YARN, {"rope_freqs.weight": np.ones(HEAD_DIM // 2, "f4")}, "both rope_freqs"),
        ({}, {"rope_freqs.weight": np.ones(HEAD_DIM, "f4")}, "16 factors for 8"),
    ],
)
def test_what_cannot_be_applied_is_refused(meta, tensors, match):
    with pytest.raises(UnsupportedModelError, match=match):
        gguf_rope_scaling(_Checkpoint(meta, tensors), HEAD_DIM)
