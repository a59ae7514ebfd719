"""`--kv-dtype` on every GPU target (compile only here): int8 pages as uint32 words, and f16
pages under f32 math, build each target's library."""

from __future__ import annotations

import json

import pytest

from mlcx.artifact.config import Artifact
from mlcx.targets.webgpu_plan.schema import PLAN_FILE
from tests.support.tiny_models import TinySpec
from tests.targets.test_qwen3_targets import LIBRARIES

LIBRARIES = {**LIBRARIES, "vulkan": (PLAN_FILE,), "webgpu": (PLAN_FILE,)}


def _pages_dtypes(artifact) -> set[str]:
    plan = json.loads((artifact / PLAN_FILE).read_text())
    inputs = {i["name"]: i for i in plan["functions"]["decode"]["inputs"]}
    return {f["dtype"] for f in inputs["kv_pages"]["fields"]}


@pytest.mark.parametrize("target", sorted(LIBRARIES))
def test_int8_kv_builds_the_target_library(compiled, target):
    artifact = compiled(TinySpec(), "q4f16", target=target, kv_dtype="int8")
    for name in LIBRARIES[target]:
        assert (artifact / name).stat().st_size > 0, name
    layout = Artifact(artifact).config.kv_layout
    assert (layout.cache_dtype, layout.element) == ("int8", "uint32")
    if target in ("vulkan", "webgpu"):
        assert _pages_dtypes(artifact) == {"uint32"}


@pytest.mark.parametrize("target", ["cuda", "metal"])
def test_f16_kv_under_f32_math_builds(compiled, target):
    artifact = compiled(TinySpec(), "q0f32", target=target, kv_dtype="float16")
    assert (artifact / LIBRARIES[target][0]).stat().st_size > 0


def test_a_webgpu_plan_with_f16_kv_under_f32_math_needs_shader_f16(compiled):
    artifact = compiled(TinySpec(), "q0f32", target="webgpu", kv_dtype="float16")
    plan = json.loads((artifact / PLAN_FILE).read_text())
    assert "shader-f16" in plan["features"] and plan["activation_dtype"] == "float32"
    assert _pages_dtypes(artifact) == {"float16"}
