"""The tests' artifact cache (tests/support/compile_cache.py): keyed by content, so the same
tiny model written into another folder hits, and any changed byte or request field misses; each
caller gets a private copy that names its own source. The same holds for single files kept by
key (disk_cache.kept_copy: the GGUF files llama.cpp converts)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

from mlcx.artifact.config import CONFIG_FILE
from mlcx.compile.model import CompileRequest
from tests.support import compile_cache, disk_cache
from tests.support.compile_cache import compile_model, request_key
from tests.support.tiny_models import TinySpec


def _fake_compile(req, progress=None):
    req.output.mkdir(parents=True)
    (req.output / CONFIG_FILE).write_text("{}")
    return req.output


def _request(folder, out) -> CompileRequest:
    return CompileRequest(str(folder), quantization="q0f32", output=out, kv_dtype="float32")


def test_the_key_follows_content_not_paths(tiny_model, tmp_path):
    folder = tiny_model(TinySpec())
    moved = tmp_path / folder.name
    shutil.copytree(folder, moved)
    key = request_key(_request(folder, tmp_path / "a"))
    assert request_key(_request(moved, tmp_path / "b")) == key
    assert request_key(replace(_request(moved, tmp_path / "b"), prefill_chunk=64)) != key
    config = json.loads((moved / "config.json").read_text())
    config["rms_norm_eps"] = config["rms_norm_eps"] * 2
    (moved / "config.json").write_text(json.dumps(config))
    assert request_key(_request(moved, tmp_path / "b")) != key


def test_each_caller_gets_a_private_copy_naming_its_source(tiny_model, tmp_path):
    folder = tiny_model(TinySpec())
    first = compile_model(_request(folder, tmp_path / "first"))
    before = sorted(p.relative_to(first) for p in first.rglob("*"))
    (first / CONFIG_FILE).write_text("broken by a test")
    moved = tmp_path / "elsewhere" / folder.name
    shutil.copytree(folder, moved)
    second = compile_model(_request(moved, tmp_path / "second"))
    assert sorted(p.relative_to(second) for p in second.rglob("*")) == before
    assert json.loads((second / CONFIG_FILE).read_text())["source"] == str(moved.resolve())


def test_a_hit_logs_the_warnings_the_compile_logged(tiny_model, tmp_path, monkeypatch, caplog):
    """Tests read a compile's warnings (caplog): a copy from the cache says them again."""
    compiles = []

    def compile_and_warn(req, progress=None):
        compiles.append(req)
        logging.getLogger("mlcx.frontends.convert").warning("w: GGUF Q4_K re-quantized (lossy)")
        req.output.mkdir(parents=True)
        (req.output / CONFIG_FILE).write_text("{}")
        return req.output

    monkeypatch.setattr(compile_cache, "ROOT", tmp_path / "cache")
    monkeypatch.setattr(compile_cache.compile_module, "compile_model", compile_and_warn)
    folder = tiny_model(TinySpec())
    said = []
    for out in ("first", "second"):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            compile_model(_request(folder, tmp_path / out))
        said.append([(r.name, r.getMessage()) for r in caplog.records])
    assert len(compiles) == 1
    assert said[0] == said[1] == [("mlcx.frontends.convert", "w: GGUF Q4_K re-quantized (lossy)")]


def test_prune_deletes_only_entries_no_run_used_lately(tiny_model, tmp_path, monkeypatch):
    """The cache outlives checkouts: entries of old code hashes go, a hit keeps its entry."""
    monkeypatch.setattr(compile_cache, "ROOT", tmp_path / "cache")
    monkeypatch.setattr(compile_cache.compile_module, "compile_model", _fake_compile)
    folder = tiny_model(TinySpec())
    used = compile_model(_request(folder, tmp_path / "used"))
    stale = compile_model(replace(_request(folder, tmp_path / "stale"), prefill_chunk=64))
    entries = {p.name: p for p in (tmp_path / "cache").iterdir() if p.is_dir()}
    assert len(entries) == 2
    long_ago = time.time() - (disk_cache.PRUNE_DAYS + 1) * 86400
    for path in (tmp_path / "cache").iterdir():  # each entry's folder, lock and log
        os.utime(path, (long_ago, long_ago))
    compile_model(_request(folder, used))  # a hit
    assert disk_cache.prune(compile_cache.ROOT) == 1
    left = [p for p in (tmp_path / "cache").iterdir()]
    kept = request_key(_request(folder, used))[:24]
    assert {p.name.split(".")[0] for p in left} == {kept}
    assert stale.exists()  # callers' copies are theirs


def test_a_result_of_a_request_is_made_once(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "ROOT", tmp_path / "cache")
    folder, made = tiny_model(TinySpec()), []

    def make():
        made.append(1)
        return {"gpu_linear": "mlcx"}

    request = _request(folder, tmp_path / "a")
    for _ in range(2):
        assert compile_cache.cached_result(request, "rules", make) == {"gpu_linear": "mlcx"}
    compile_cache.cached_result(replace(request, target="webgpu"), "rules", make)
    assert len(made) == 2


def test_a_result_of_other_work_is_made_once_per_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_cache, "ROOT", tmp_path / "cache")
    made = []

    def make():
        made.append(1)
        return {"case": [0, "scheduled"]}

    for _ in range(2):  # JSON round trip: tuples come back as lists
        assert compile_cache.cached_json("k", {"t": "metal"}, make) == {"case": [0, "scheduled"]}
    compile_cache.cached_json("k", {"t": "cuda"}, make)
    compile_cache.cached_json("other", {"t": "metal"}, make)
    assert len(made) == 3


def test_with_the_cache_off_a_result_is_made_each_time_and_read_back_as_json(monkeypatch):
    monkeypatch.setattr(compile_cache, "ROOT", Path("off"))
    made = []

    def make():
        made.append(1)
        return {"case": (0, "scheduled")}

    for _ in range(2):  # the same JSON round trip as with the cache on
        assert compile_cache.cached_json("k", {"t": "metal"}, make) == {"case": [0, "scheduled"]}
    assert len(made) == 2


def test_a_kept_file_is_written_once_per_key_and_copied_to_each_caller(tmp_path):
    writes = []

    def write(path):
        writes.append(path)
        path.write_bytes(b"gguf %d" % len(writes))

    root, parts = tmp_path / "cache", {"folder": "abc", "options": ["--outtype", "f32"]}
    first = disk_cache.kept_copy(root, parts, tmp_path / "a.gguf", write)
    second = disk_cache.kept_copy(root, parts, tmp_path / "b.gguf", write)
    assert len(writes) == 1 and first.read_bytes() == second.read_bytes() == b"gguf 1"
    second.write_bytes(b"edited")  # a caller's copy is its own
    assert disk_cache.kept_copy(root, parts, tmp_path / "c.gguf", write).read_bytes() == b"gguf 1"
    other = disk_cache.kept_copy(root, {**parts, "folder": "abd"}, tmp_path / "d.gguf", write)
    assert len(writes) == 2 and other.read_bytes() == b"gguf 2"
    off = disk_cache.kept_copy(Path("off"), parts, tmp_path / "e.gguf", write)
    assert len(writes) == 3 and off.read_bytes() == b"gguf 3"
    assert sorted(p.suffix for p in root.iterdir()) == [".gguf", ".gguf"]
