"""The WebGPU plan of a tiny model: structure, round trip, and WGSL that wgpu accepts."""

from __future__ import annotations

import json
import shutil

import pytest

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import read_index
from mlcx.errors import ArtifactError
from mlcx.kernels.kv_layout import NUM_PAGES
from mlcx.kernels.step_params import DECODE, KV_PAGES, PREFILL, entry_inputs
from mlcx.runtime.backends.wgpu_kernels import native_wgsl
from mlcx.runtime.backends.wgpu_runner import load_plan
from mlcx.targets.base import BuildOptions
from mlcx.targets.webgpu_plan.schema import PLAN_FILE, Plan
from tests.support.tiny_models import TinySpec


def _plan(path) -> Plan:
    return load_plan(Artifact(path))


def test_plan_round_trips_and_names_every_entry_function(webgpu_artifact):
    path = webgpu_artifact()
    text = (path / PLAN_FILE).read_text()
    plan = Plan.from_json(text)
    assert json.loads(plan.to_json()) == json.loads(text)
    assert set(plan.functions) == {"prefill", "decode", "copy_pages"}
    assert plan.features == ("subgroups",)  # mlcx's linear kernels share activations
    decode = plan.functions["decode"]
    assert {"tokens", "batch", "num_pages", "nnz_pages"} <= set(decode.shape_vars)
    ops = {step.op for step in decode.steps}
    assert ops == {"alloc", "view", "call", "release"}


def test_step_functions_take_the_defined_inputs_and_page_shape(webgpu_artifact):
    """The exported functions follow mlcx.kernels, whose definitions web/src/step.js reads from
    the plan (tests/webgpu/test_web_step.py)."""
    path = webgpu_artifact()
    plan, layout = _plan(path), Artifact(path).config.kv_layout
    for name in (PREFILL, DECODE):
        inputs = {i.name: i for i in plan.functions[name].inputs}
        assert tuple(inputs) == entry_inputs(name)
        pages = inputs[KV_PAGES].fields
        assert [f.shape for f in pages] == [layout.pages_shape(NUM_PAGES)] * len(pages)
        assert {f.dtype for f in pages} == {layout.element}


def test_a_plan_with_other_step_inputs_is_refused(webgpu_artifact, tmp_path):
    target = tmp_path / "old"
    shutil.copytree(webgpu_artifact(), target)
    data = json.loads((target / PLAN_FILE).read_text())
    data["functions"][DECODE]["inputs"][1]["name"] = "pos"
    (target / PLAN_FILE).write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match="decode takes .*pos.*; recompile the model"):
        _plan(target)


def test_launches_are_expressions_over_shape_variables(webgpu_artifact):
    plan = _plan(webgpu_artifact())
    for func in plan.tir_functions.values():
        assert func.launches, func.name
        for launch in func.launches:
            names = _names(launch.grid) | _names(launch.scalars)
            assert names <= set(func.shape_vars), (func.name, names)


def test_artifact_config_and_weights_match_the_cpu_format(webgpu_artifact, compiled):
    web, cpu = Artifact(webgpu_artifact()), Artifact(compiled(TinySpec(), "q0f32"))
    assert web.config.runtime == "wgpu" and web.config.library == PLAN_FILE
    assert cpu.config.model == web.config.model
    assert cpu.config.weight_formats == web.config.weight_formats
    assert read_index(web.params_dir) == read_index(cpu.params_dir)


@pytest.mark.parametrize("quantization", ["q0f32", "q4f32"])
def test_every_f32_kernel_is_valid_wgsl(adapter, webgpu_artifact, quantization):
    path = webgpu_artifact(quantization)
    device = adapter.request_device_sync(required_features=["subgroup"])
    for kernel in _plan(path).kernels.values():
        device.create_shader_module(code=native_wgsl((path / kernel.shader).read_text()))


def test_f16_kernels_are_valid_wgsl_on_a_shader_f16_device(adapter, webgpu_artifact):
    path = webgpu_artifact("q4f16")
    plan = _plan(path)
    assert plan.features == ("shader-f16", "subgroups")
    if "shader-f16" not in adapter.features:
        pytest.skip(f"{adapter.info['device']} has no shader-f16; f16 WGSL cannot be checked")
    device = adapter.request_device_sync(required_features=["shader-f16", "subgroup"])
    for kernel in plan.kernels.values():
        device.create_shader_module(code=native_wgsl((path / kernel.shader).read_text()))


def test_kernels_that_use_subgroups_enable_them_for_browsers(webgpu_artifact):
    path = webgpu_artifact()
    users = 0
    for kernel in _plan(path).kernels.values():
        code = (path / kernel.shader).read_text()
        uses = "subgroupShuffle" in code
        users += uses
        assert code.lstrip().startswith("enable subgroups;") == uses, kernel.name
    assert users  # the linear kernels


def test_without_subgroups_no_kernel_needs_them(adapter, webgpu_artifact):
    path = webgpu_artifact("q4f32", options=BuildOptions(subgroups=False))
    plan = _plan(path)
    assert plan.features == ()
    device = adapter.request_device_sync()  # no subgroup feature
    for kernel in plan.kernels.values():
        code = (path / kernel.shader).read_text()
        assert "subgroup" not in code, kernel.name
        device.create_shader_module(code=code)


def _names(trees) -> set[str]:
    out: set[str] = set()
    for tree in trees:
        if isinstance(tree, str):
            out.add(tree)
        elif isinstance(tree, list):
            out |= _names(tree[1:])
    return out


def test_gguf_blocks_need_no_f16_or_8_bit_wgsl_types(adapter, gguf_artifact):
    path = gguf_artifact("webgpu")
    plan = _plan(path)
    assert plan.features == ("subgroups",)  # no shader-f16
    tensors = read_index(Artifact(path).params_dir)[1]
    assert {"int8", "float16"} <= {t.dtype for t in tensors}  # Q8_0 codes, block scales
    device = adapter.request_device_sync(required_features=["subgroup"])
    for kernel in plan.kernels.values():
        code = (path / kernel.shader).read_text()
        assert "f16" not in code.replace("float16", "") and "i8" not in code, kernel.name
        device.create_shader_module(code=native_wgsl(code))
