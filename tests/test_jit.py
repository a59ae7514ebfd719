"""The JIT cache key (mlcx/compile/jit.py): equal for equal compiles, different whenever the source
model, an option that changes the output, the tuning database or mlcx's compiling code does."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

from mlcx.compile import jit
from mlcx.compile.model import CompileRequest
from mlcx.targets.base import BuildOptions
from tests.support.tiny_models import TinySpec


def _request(model, **kw) -> CompileRequest:
    return CompileRequest(model=str(model), **kw)


def test_equal_requests_share_a_key_whatever_their_output(tiny_model, tmp_path):
    model = tiny_model(TinySpec())
    a = _request(model, output=tmp_path / "a")
    assert jit.cache_key(a) == jit.cache_key(replace(a, output=tmp_path / "b"))
    assert jit.artifact_dir(a) == jit.artifact_dir(replace(a, output=tmp_path / "b"))


def test_a_new_model_at_the_same_path_gets_a_new_key(tiny_model, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model(TinySpec()), folder)
    before = jit.cache_key(_request(folder))
    config = folder / "config.json"
    config.write_text(config.read_text() + " ")
    assert jit.cache_key(_request(folder)) != before


def test_options_that_change_the_output_change_the_key(tiny_model):
    model = tiny_model(TinySpec())
    base = jit.cache_key(_request(model))
    changed = [
        _request(model, kv_dtype="float16"),
        _request(model, quantization="q0f32"),
        _request(model, page_size=32),
        _request(model, options=BuildOptions(num_threads=(os.cpu_count() or 1) + 1)),
        _request(model, target="webgpu"),
    ]
    keys = {jit.cache_key(r) for r in changed}
    assert base not in keys and len(keys) == len(changed)


def test_threads_count_only_where_the_target_uses_them(tiny_model):
    model = tiny_model(TinySpec())
    gpu = [_request(model, target="webgpu", options=BuildOptions(num_threads=n)) for n in (1, 3)]
    assert jit.cache_key(gpu[0]) == jit.cache_key(gpu[1])


def test_the_code_hash_covers_the_compiling_sources(monkeypatch, tmp_path):
    before = jit.code_hash()
    copy = tmp_path / "mlcx"
    shutil.copytree(jit.MLCX, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "kernels" / "attention.py").write_text("# changed\n", "utf-8")
    monkeypatch.setattr(jit, "MLCX", copy)
    jit.code_hash.cache_clear()
    try:
        assert jit.code_hash() != before
    finally:
        jit.code_hash.cache_clear()
