"""The default model compiled once per KV dtype for the whole session (each compile takes
20-30 s on 2 cores), shared by the slow tests that need it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_mlcx
from tests.support.default_model import DEFAULT, default_gguf


@pytest.fixture(scope="session")
def default_artifact(tmp_path_factory):
    """Factory: default_artifact(kv_dtype=None) -> artifact dir (None: the math's dtype)."""
    built: dict[str | None, Path] = {}

    def build(kv_dtype: str | None = None) -> Path:
        if kv_dtype not in built:
            default_gguf()  # downloads once into the mlcx cache
            out = tmp_path_factory.mktemp("default") / "smollm2"
            extra = ["--kv-dtype", kv_dtype] if kv_dtype else []
            result = run_mlcx("compile", DEFAULT, "--target", "cpu", "-o", str(out), *extra)
            assert result.returncode == 0, result.stderr
            built[kv_dtype] = out
        return built[kv_dtype]

    return build
