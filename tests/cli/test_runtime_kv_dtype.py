"""`--kv-dtype` of the commands that run the engine: a model compiled on the fly gets its own
cache entry per KV dtype; an artifact must already have the dtype asked for."""

from __future__ import annotations

import pytest

from mlcx.compile.jit import resolve_artifact
from tests.support.tiny_models import TinySpec


def test_a_model_compiles_once_per_kv_dtype(tiny_model, compiled, monkeypatch, tmp_path):
    monkeypatch.setenv("MLCX_CACHE", str(tmp_path))
    model = str(tiny_model(TinySpec()))
    int8 = resolve_artifact(model, quiet=True, kv_dtype="int8")
    assert int8.path.parent == tmp_path / "artifacts"
    assert int8.config.cache_dtype == "int8"
    assert resolve_artifact(model, quiet=True, kv_dtype="int8").path == int8.path
    with pytest.raises(ValueError, match="float32 KV cache, not int8.*--kv-dtype int8"):
        resolve_artifact(str(compiled()), kv_dtype="int8")
