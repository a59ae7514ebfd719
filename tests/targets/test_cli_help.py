"""`mlcx compile --help` lists every target with its summary, vulkan's caveat included."""

from __future__ import annotations

from mlcx.targets.registry import TARGETS
from tests.support.cli import run_mlcx


def test_compile_help_lists_targets_and_the_vulkan_route():
    result = run_mlcx("compile", "--help", env={"COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.replace("│", " ").split())
    for name in TARGETS:
        assert f"{name}:" in text
    assert "no apache-tvm wheel has Vulkan codegen" in text
    assert "wgpu-native" in text
