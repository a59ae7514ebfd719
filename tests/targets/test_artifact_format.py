"""Every target's artifact stores weights, tokenizer and config exactly as the cpu artifact
does: one model, one set of weight files, whatever device runs it."""

from __future__ import annotations

import json
import shutil

import pytest

from mlcx.artifact.config import CONFIG_FILE, ArtifactConfig
from mlcx.targets.registry import TARGETS
from tests.support.tiny_models import TinySpec

QUANT = "q4f16"
GPU_TARGETS = [t for t in ("cuda", "metal", "iphone", "android", "webgpu") if t in TARGETS]
# What legitimately differs between targets.
PER_TARGET_FIELDS = {"linear_kernels", "target", "tvm_target", "library", "runtime"}


@pytest.fixture(scope="module")
def cpu_artifact(compiled):
    return compiled(TinySpec(), QUANT, target="cpu")


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_weights_and_tokenizer_are_byte_identical(compiled, cpu_artifact, target):
    artifact = compiled(TinySpec(), QUANT, target=target)
    reference = json.loads((cpu_artifact / "params" / "index.json").read_text())
    assert json.loads((artifact / "params" / "index.json").read_text()) == reference
    for shard in reference["shards"]:
        name = shard["file"]
        assert (artifact / "params" / name).read_bytes() == (
            cpu_artifact / "params" / name
        ).read_bytes()
    for name in ("tokenizer.json", "mlcx-tokenizer.json"):
        assert (artifact / name).read_bytes() == (cpu_artifact / name).read_bytes()


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_config_has_the_cpu_format(compiled, cpu_artifact, target):
    artifact = compiled(TinySpec(), QUANT, target=target)
    ours = json.loads((artifact / CONFIG_FILE).read_text())
    cpu = json.loads((cpu_artifact / CONFIG_FILE).read_text())
    assert ours.keys() == cpu.keys()
    assert {k: v for k, v in ours.items() if k not in PER_TARGET_FIELDS} == {
        k: v for k, v in cpu.items() if k not in PER_TARGET_FIELDS
    }
    assert cpu["linear_kernels"] == "int16" and ours["linear_kernels"] is None  # a CPU choice
    config = ArtifactConfig.from_json((artifact / CONFIG_FILE).read_text())
    assert config.target == target and config.runtime == TARGETS[target].runtime
    assert (artifact / config.library).is_file()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"kv_dtype": "int4"}, "kv_dtype 'int4'"),
        ({"kv_dtype": "int8", "target": "webgpu"}, "int8 KV cache is CPU-only"),
    ],
    ids=["unknown", "int8-off-cpu"],
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
