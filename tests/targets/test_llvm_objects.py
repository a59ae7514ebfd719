"""With $MLCX_KERNEL_OBJECTS a CPU library links its kernels' LLVM objects from a store: each
kernel built once, by any process, and linked into every later library that holds it. The
library computes what TVM's own build of the same model computes, bit for bit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest, compile_model
from mlcx.passes import lowered_kernels
from mlcx.targets import llvm_objects
from tests.support.cli import run_mlcx
from tests.support.harness import Harness

PROMPT = [5, 9, 14, 20, 33, 7]


def _logits(artifact: Path) -> list[np.ndarray]:
    """The prompt's logits (every row), then two greedy decode steps'."""
    harness = Harness(artifact)
    rows = [harness.step({0: PROMPT}, all_rows=True)[0]]
    for _ in range(2):
        rows.append(harness.decode({0: int(rows[-1][-1].argmax())})[0])
    return rows


def _objects(store: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in store.glob("*.o")}


@pytest.fixture(scope="module")
def built(tiny_model, tmp_path_factory):
    """A tiny model compiled by TVM's own build, then by an `mlcx compile` subprocess with an
    empty store, then in this process with the store that subprocess filled."""
    root = tmp_path_factory.mktemp("llvm_objects")
    store, model = root / "store", tiny_model()
    req = CompileRequest(model=str(model), target="cpu", output=root / "tvm")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(llvm_objects.ENV, "off")
        compile_model(req)
        result = run_mlcx(
            "compile", str(model), "--target", "cpu", "-o", str(root / "cli"),
            env={llvm_objects.ENV: str(store)},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        filled = _objects(store)
        patch.setenv(llvm_objects.ENV, str(store))
        # lowered afresh, as in a new process: an earlier test's lowering of an equal kernel
        # may name its buffers otherwise (in assertion messages), which the key includes
        lowered_kernels.forget()
        compile_model(replace(req, output=root / "kept"))
        return root, req, filled


def test_a_library_of_kept_objects_computes_what_tvm_s_build_does(built):
    root, _, _ = built
    want = _logits(root / "tvm")
    for artifact in ("cli", "kept"):
        for got, expected in zip(_logits(root / artifact), want, strict=True):
            np.testing.assert_array_equal(got, expected)


def test_another_process_links_the_objects_a_first_one_built(built):
    root, _, filled = built
    assert len(filled) >= 10  # embedding, attention, the linear kernels, copies, shape functions
    assert _objects(root / "store") == filled


def test_another_page_size_builds_only_the_kernels_it_changes(built, monkeypatch):
    root, req, filled = built
    monkeypatch.setenv(llvm_objects.ENV, str(root / "store"))
    compile_model(replace(req, page_size=32, output=root / "pages32"))
    added = _objects(root / "store").keys() - filled.keys()
    assert 0 < len(added) < len(filled) / 2
