"""The image encoder on GPU targets: every kernel of `embed_image` is scheduled by a dlight
rule other than Fallback (webgpu, cuda, metal, iphone, android; f32, and f16 where the encoder
follows an f16 text model), and each target writes its encoder files into vision/ (built
here; run where a GPU is; webgpu runs in test_encoder_webgpu.py). The rules are kept between
runs as the tests keep compiles (tests/support/compile_cache.py)."""

from __future__ import annotations

import pytest
import tvm

from mlcx.artifact.encoder import read_encoder
from mlcx.compile.encoder import ENCODER_DTYPE, compile_encoder, encoder_dtype
from mlcx.compile.model import resolve_options
from mlcx.errors import ToolchainError
from mlcx.frontends.encoders import ENCODERS
from mlcx.frontends.source import load_source
from mlcx.kernels.gpu.config import gpu_config
from mlcx.passes.gpu.schedule import schedule_rules_of
from mlcx.passes.pipeline_gpu import gpu_graph_passes
from mlcx.targets.base import BuildOptions
from mlcx.targets.registry import get_target
from mlcx.targets.toolchain import require
from tests.support.compile_cache import cached_json
from tests.support.disk_cache import tree_digest

TOOLS = {"metal": ("clang", "ld64.lld"), "iphone": ("llvm-ar",), "android": ("llvm-ar", "ld.lld")}


def _target(name: str):
    target = get_target(name)
    return target, target.tvm_target(resolve_options(BuildOptions(), target))


@pytest.mark.parametrize(
    "name,dtype",
    [(t, ENCODER_DTYPE) for t in ("webgpu", "cuda", "metal", "iphone", "android")]
    + [(t, "float16") for t in ("webgpu", "cuda", "metal", "android")],
)
def test_no_encoder_kernel_is_left_to_fallback(vision_folder, name, dtype):
    parts = {"source": tree_digest(vision_folder), "target": name, "dtype": dtype}
    rules = cached_json("encoder-rules", parts, lambda: _encoder_rules(vision_folder, name, dtype))
    assert rules and "Fallback" not in rules.values(), rules
    assert {"layer_norm", "softmax"} <= set(rules)


def _encoder_rules(vision_folder, name: str, dtype: str) -> dict[str, str]:
    """The dlight rule that schedules each kernel of the encoder's GPU graph for `name`."""
    source = load_source(str(vision_folder))
    family = ENCODERS[source.arch.encoder]
    module = family.build(family.config_from_hf(source.tensors.config), dtype)
    mod, _ = module.export_tvm(spec=module.export_spec())
    _, tvm_target = _target(name)
    with tvm_target:
        passes = gpu_graph_passes(tvm_target, dtype, gpu_config(tvm_target))
        return schedule_rules_of(tvm.transform.Sequential(passes)(mod))


# the files each target writes (the library first), beside encoder.json and params/
FILES = {
    "cuda": ["encoder-cuda.so"],
    "metal": ["encoder-metal.dylib", "encoder-metal.metal"],
    "iphone": ["encoder-iphone.a", "encoder-iphone.metal"],
    "android": ["encoder-android.a", "encoder-android.cl", "encoder-android.so"],
    "vulkan": ["webgpu-plan.json", "shaders"],  # webgpu's plan (run in test_encoder_webgpu)
}


@pytest.mark.parametrize("name", list(FILES))
def test_artifact_has_its_encoder(vision_folder, tmp_path, name):
    target = get_target(name)
    options = resolve_options(BuildOptions(), target)
    try:
        require(*TOOLS.get(name, ()))
    except ToolchainError as err:
        pytest.skip(str(err))
    source = load_source(str(vision_folder))
    assert compile_encoder(source, target, target.tvm_target(options), tmp_path, None, options)
    config = read_encoder(tmp_path)
    folder = tmp_path / "vision"
    assert config.device == name and config.library == FILES[name][0]
    assert {p.name for p in folder.iterdir()} == {*FILES[name], "encoder.json", "params"}
    if name == "iphone":  # the phone's symbols under the model's prefix + vision_
        assert b"mlcx_vision_" in (folder / config.library).read_bytes()


def test_gpu_encoders_follow_the_text_model_s_dtype():
    assert encoder_dtype(get_target("cpu"), "float16") == "float32"
    assert encoder_dtype(get_target("webgpu"), "float16") == "float16"
    assert encoder_dtype(get_target("cuda"), "float32") == "float32"
    assert encoder_dtype(get_target("iphone"), "float16") == "float32"  # F32_ENCODER_TARGETS
