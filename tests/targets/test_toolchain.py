"""Missing tools fail early with the Debian package to install, and the setup script
installs every one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlcx.errors import ToolchainError
from mlcx.targets import toolchain
from mlcx.targets.registry import get_target

SETUP = Path(__file__).parents[2] / "scripts" / "setup-system.sh"
APT_PACKAGES = {t.debian_package for t in toolchain.TOOLS.values() if t.name != "nvcc"}


@pytest.fixture
def no_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: nothing is found


@pytest.mark.parametrize("tool", sorted(toolchain.TOOLS))
def test_missing_tool_names_its_debian_package(no_tools, tool):
    with pytest.raises(ToolchainError) as err:
        toolchain.find_tool(tool)
    assert f"'{toolchain.TOOLS[tool].debian_package}'" in str(err.value)
    assert "setup-system.sh" in str(err.value)


@pytest.mark.parametrize(
    "target,package", [("metal", "clang"), ("iphone", "llvm"), ("android", "llvm")]
)
def test_targets_check_their_tools_before_compiling(no_tools, target, package):
    with pytest.raises(ToolchainError, match=f"'{package}'"):
        get_target(target).build(None, None, None)  # fails before touching the module


def test_setup_script_installs_every_tool():
    block = SETUP.read_text().split("PACKAGES=(\n", 1)[1].split("\n)\n", 1)[0]
    packages = {word for line in block.splitlines() for word in line.split("#")[0].split()}
    assert packages >= APT_PACKAGES


def test_versioned_names_are_found(monkeypatch, tmp_path):
    tool = tmp_path / "ld64.lld-14"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert toolchain.find_tool("ld64.lld") == str(tool)
