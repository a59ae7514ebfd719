"""Every target's artifact stores the same weights, tokenizer and config as the cpu artifact:
one model whatever device runs it. The GPU targets' weight files are byte-identical to each
other; the cpu artifact holds the same codes and scales with the bytes of its int16-kernel
weights in row-tiled order (mlcx.quantization.tiling), which its config's formats say."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from mlcx.artifact.config import CONFIG_FILE, ArtifactConfig
from mlcx.artifact.weight_shards import load_arrays
from mlcx.kernels.decode_buckets import DECODE_BUCKETS
from mlcx.quantization.formats import GroupIntFormat, format_from_name
from mlcx.targets.registry import TARGETS
from tests.support.tiny_models import TinySpec

QUANT = "q4f16"
GPU_TARGETS = [t for t in ("cuda", "metal", "iphone", "android", "webgpu") if t in TARGETS]
# What legitimately differs between targets.
PER_TARGET_FIELDS = {
    "decode_graph_batch",  # cuda: decode runs as CUDA graphs up to this batch
    "linear_kernels",
    "target",
    "tvm_target",
    "library",
    "runtime",
    "weight_formats",  # the cpu artifact's are row-tiled (checked below)
}


@pytest.fixture(scope="module")
def cpu_artifact(compiled):
    # the CPU's own default KV dtype (f16, as the GPU targets' q4f16 math), not the f32 pages
    # the `compiled` fixture gives model-math tests
    return compiled(TinySpec(), QUANT, target="cpu", kv_dtype=None)


def _weights(artifact) -> dict[str, np.ndarray]:
    """Every matrix weight dequantized through the format the artifact's config records, and
    every other array as stored."""
    formats = ArtifactConfig.from_json((artifact / CONFIG_FILE).read_text()).weight_formats
    arrays = dict(load_arrays(artifact / "params"))
    out = {name: a for name, a in arrays.items() if name.rsplit(".", 1)[0] not in formats}
    for target, name in formats.items():
        fmt = format_from_name(name)
        planes = {s: arrays[f"{target}.{s}"] for s in fmt.suffixes}
        out[target] = fmt.unpack(planes) if isinstance(fmt, GroupIntFormat) else planes
    return out


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_weights_and_tokenizer_are_the_cpu_artifacts(compiled, cpu_artifact, target):
    artifact = compiled(TinySpec(), QUANT, target=target)
    gpu, cpu = _weights(artifact), _weights(cpu_artifact)
    assert gpu.keys() == cpu.keys()
    for name, value in cpu.items():
        if isinstance(value, dict):
            for suffix, plane in value.items():
                np.testing.assert_array_equal(gpu[name][suffix], plane)
        else:
            np.testing.assert_array_equal(gpu[name], value)
    for name in ("tokenizer.json", "mlcx-tokenizer.json"):
        assert (artifact / name).read_bytes() == (cpu_artifact / name).read_bytes()


def test_gpu_targets_share_byte_identical_weight_files(compiled):
    first, *rest = (compiled(TinySpec(), QUANT, target=t) for t in GPU_TARGETS)
    index = json.loads((first / "params" / "index.json").read_text())
    for artifact in rest:
        assert json.loads((artifact / "params" / "index.json").read_text()) == index
        for shard in index["shards"]:
            name = shard["file"]
            assert (artifact / "params" / name).read_bytes() == (
                first / "params" / name
            ).read_bytes()


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_config_has_the_cpu_format(compiled, cpu_artifact, target):
    artifact = compiled(TinySpec(), QUANT, target=target)
    ours = json.loads((artifact / CONFIG_FILE).read_text())
    cpu = json.loads((cpu_artifact / CONFIG_FILE).read_text())
    assert ours.keys() == cpu.keys()
    assert {k: v for k, v in ours.items() if k not in PER_TARGET_FIELDS} == {
        k: v for k, v in cpu.items() if k not in PER_TARGET_FIELDS
    }
    tiled = {format_from_name(v) for v in cpu["weight_formats"].values()}
    assert all(f.tiled for f in tiled) and all(
        not f.tiled for f in map(format_from_name, ours["weight_formats"].values())
    )
    row_major = {k: format_from_name(v).row_major.name for k, v in cpu["weight_formats"].items()}
    assert ours["weight_formats"] == row_major
    assert cpu["linear_kernels"] == "int16" and ours["linear_kernels"] is None  # a CPU choice
    assert cpu["decode_graph_batch"] is None
    assert ours["decode_graph_batch"] == (DECODE_BUCKETS[-1] if target == "cuda" else None)
    config = ArtifactConfig.from_json((artifact / CONFIG_FILE).read_text())
    assert config.target == target and config.runtime == TARGETS[target].runtime
    assert (artifact / config.library).is_file()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"kv_dtype": "int4"}, "kv_dtype 'int4'"),
    ],
    ids=["unknown"],
)
def test_a_config_with_a_bad_kv_dtype_is_refused_clearly(cpu_artifact, tmp_path, changes, message):
    from tests.support.cli import one_line_error, run_mlcx

    broken = tmp_path / "broken"
    shutil.copytree(cpu_artifact, broken)
    config = json.loads((broken / CONFIG_FILE).read_text())
    config.update(changes)
    (broken / CONFIG_FILE).write_text(json.dumps(config))
    line = one_line_error(run_mlcx("generate", str(broken), "--prompt", "hi"))
    assert message in line and "recompile" in line
