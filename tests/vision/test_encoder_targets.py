"""The image encoder on GPU targets: every kernel of `embed_image` is scheduled by a dlight
rule other than Fallback (webgpu, cuda, metal), and `mlcx compile --target cuda` writes the
encoder library beside the text model (built here; run where a GPU is)."""

from __future__ import annotations

import pytest
import tvm

from mlcx.artifact.encoder import read_encoder
from mlcx.compile import resolve_options
from mlcx.compile_encoder import ENCODER_DTYPE, compile_encoder
from mlcx.frontends.encoders import ENCODERS
from mlcx.frontends.source import load_source
from mlcx.kernels.gpu.config import gpu_config
from mlcx.passes.gpu.schedule import schedule_rules_of
from mlcx.passes.pipeline_gpu import gpu_graph_passes
from mlcx.targets.base import BuildOptions
from mlcx.targets.registry import get_target


def _target(name: str):
    target = get_target(name)
    return target, target.tvm_target(resolve_options(BuildOptions(), target))


@pytest.mark.parametrize("name", ["webgpu", "cuda", "metal"])
def test_no_encoder_kernel_is_left_to_fallback(vision_folder, name):
    source = load_source(str(vision_folder))
    family = ENCODERS[source.arch.encoder]
    module = family.build(family.config_from_hf(source.tensors.config), ENCODER_DTYPE)
    mod, _ = module.export_tvm(spec=module.export_spec())
    _, tvm_target = _target(name)
    with tvm_target:
        passes = gpu_graph_passes(tvm_target, ENCODER_DTYPE, gpu_config(tvm_target))
        rules = schedule_rules_of(tvm.transform.Sequential(passes)(mod))
    assert rules and "Fallback" not in rules.values(), rules
    assert {"layer_norm", "softmax"} <= set(rules)


def test_cuda_artifact_has_its_encoder(vision_folder, tmp_path):
    target, tvm_target = _target("cuda")
    assert compile_encoder(load_source(str(vision_folder)), target, tvm_target, tmp_path)
    config = read_encoder(tmp_path)
    assert config.device == "cuda" and (tmp_path / "vision" / config.library).exists()
