"""The artifact's `state_tensors` (a hybrid model's per-sequence state, without the slot axis):
validated once when the config is read, round-tripped through mlcx-config.json, and counted by
every budget (a state layer has no KV pages)."""

from __future__ import annotations

import json

import pytest

from mlcx.artifact.config import ArtifactConfig, read_config
from mlcx.artifact.kv_budget import kv_budget, state_bytes_per_sequence
from mlcx.errors import ArtifactError
from mlcx.runtime.core.cache_budget import cache_sizes
from mlcx.runtime.core.config import EngineConfig
from tests.test_kv_budget import _artifact

# Qwen3.5-shaped: 3 Gated DeltaNet layers per attention layer, 16 value heads of 128 x 128
DELTANET = [
    {"layer": i, "name": name, "shape": shape, "dtype": "float32"}
    for i in range(32)
    if i % 4 != 3
    for name, shape in (("conv", [6144, 3]), ("recurrent", [16, 128, 128]))
]


def _hybrid(state_tensors=DELTANET, **kw) -> ArtifactConfig:
    base = _artifact("float16", 8192)
    return ArtifactConfig(**{**vars(base), "state_tensors": state_tensors, **kw})


def test_state_layers_have_no_kv_pages_and_their_bytes_are_per_sequence():
    hybrid, dense = _hybrid(), _artifact("float16", 8192)
    assert hybrid.kv_layers == 8 and dense.kv_layers == 32
    assert hybrid.kv_block_bytes * 4 == dense.kv_block_bytes
    per_layer = 6144 * 3 * 4 + 16 * 128 * 128 * 4
    assert state_bytes_per_sequence(hybrid) == hybrid.state_slot_bytes == 24 * per_layer
    assert state_bytes_per_sequence(dense) == 0
    budget = kv_budget(hybrid)
    assert budget.bytes_per_token == 8 * 2 * 8 * 128 * 2
    assert budget.describe() == (
        "KV cache: float16, 32 KiB/token, 256 MiB for 8192 tokens; state: 25.7 MiB/sequence"
    )


def test_state_tensors_round_trip_through_the_config_file(tmp_path):
    config = _hybrid()
    data = json.loads(config.to_json())
    assert data["state_tensors"][1] == DELTANET[1] and data["state_slot_bytes"] > 0
    again = ArtifactConfig.from_json(config.to_json())
    assert again == config and again.state_tensors[1].shape == (16, 128, 128)
    del data["state_tensors"]  # an artifact from before hybrid models: no state
    assert ArtifactConfig.from_json(json.dumps(data)).state_tensors == ()


@pytest.mark.parametrize(
    ("tensors", "message"),
    [
        ([{"layer": 32, "name": "conv", "shape": [4, 3], "dtype": "float32"}], "layers 0..31"),
        ([{"layer": 0, "name": "conv", "shape": [4, 0], "dtype": "float32"}], "positive"),
        ([{"layer": 0, "name": "conv", "shape": [4, 3], "dtype": "int8"}], "float32, float16"),
        ([{"layer": 0, "name": "", "shape": [4], "dtype": "float32"}], "no name"),
        ([{"layer": 0, "name": "c", "shape": [4], "dtype": "float32", "size": 1}], "unknown"),
        (DELTANET[2:4] + DELTANET[:2], "layer order"),
        (DELTANET[:2] + DELTANET[:1], "listed twice"),
    ],
)
def test_a_malformed_state_tensor_is_refused_when_the_artifact_is_read(tmp_path, tensors, message):
    with pytest.raises(ValueError, match=message):
        _hybrid(tensors)
    data = json.loads(_artifact("float16", 8192).to_json())
    data["state_tensors"] = tensors
    (tmp_path / "mlcx-config.json").write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match="malformed.*recompile"):
        read_config(tmp_path, ArtifactConfig)


def test_the_engine_takes_the_states_out_of_the_cache_budget():
    hybrid = _hybrid()
    sizes = cache_sizes(hybrid, EngineConfig(max_batch=4, kv_cache_bytes=1 << 30))
    assert (sizes.live_slots, sizes.checkpoint_slots) == (4, 4)
    assert sizes.state_bytes == 8 * hybrid.state_slot_bytes
    assert sizes.num_blocks == ((1 << 30) - sizes.state_bytes) // hybrid.kv_block_bytes == 1637
    no_saves = cache_sizes(hybrid, EngineConfig(max_batch=4, enable_prefix_caching=False))
    assert (no_saves.num_state_slots, no_saves.num_blocks) == (4, 1842)
    exact = cache_sizes(hybrid, EngineConfig(kv_blocks=100, state_checkpoints=2))
    assert (exact.num_blocks, exact.num_state_slots) == (100, 18)
    with pytest.raises(ValueError, match="more than kv_cache_bytes"):
        cache_sizes(hybrid, EngineConfig(max_batch=16, kv_cache_bytes=32 * (1 << 20)))
    dense = cache_sizes(_artifact("float16", 8192), EngineConfig(max_batch=4))
    assert (dense.num_state_slots, dense.num_blocks) == (0, 512 + 1)  # one window and a block
