"""`mlcx package` for the tests: the real CLI command (typer's runner on mlcx's own app, in this
process) or `build_package`, with every model compile going through the tests' artifact cache
(tests/support/compile_cache.py), so a package's compiles are shared with the other tests that
compile the same request (the webgpu plans of test_plan.py and test_wgpu_runner.py) and with
earlier runs of this checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlcx.package import build
from tests.support import compile_cache


def package_cli(*args: str) -> str:
    """`mlcx package ARGS`: its output; fails the test with the output when it exits non-zero."""
    from mlcx.cli.main import app

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "compile_model", compile_cache.compile_model)
        result = CliRunner().invoke(app, ["package", *args])
    assert result.exit_code == 0, (result.output[-3000:], result.exception)
    return result.output


def build_package(config, out: Path) -> Path:
    """`mlcx.package.build.build_package(config, out)` with cached compiles."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "compile_model", compile_cache.compile_model)
        return build.build_package(config, out)
