"""`import mlcx` is light and names the library: LLM, SamplingParams, MLCEngine, AsyncMLCEngine
and the errors a caller catches, each imported on first use; the type stub lists the same."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mlcx

HEAVY = ("tvm", "torch", "fastapi", "starlette", "transformers", "numpy", "pydantic", "openai")


def test_importing_mlcx_imports_nothing_heavy():
    code = "import sys, mlcx; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    found = {name.split(".")[0] for name in loaded.stdout.split()}
    assert not found & set(HEAVY), sorted(found & set(HEAVY))


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("LLM", "mlcx.runtime.api.llm"),
        ("SamplingParams", "mlcx.runtime.sample.params"),
        ("MLCEngine", "mlcx.runtime.api.mlc_engine"),
        ("AsyncMLCEngine", "mlcx.runtime.api.async_mlc_engine"),
        ("EngineFailedError", "mlcx.runtime.api.async_engine"),
        ("LoraRequest", "mlcx.runtime.lora.request"),
    ],
)
def test_lazy_names_are_the_modules_objects(name, module):
    __import__(module)
    assert getattr(mlcx, name) is getattr(sys.modules[module], name)


def test_errors_are_catchable_from_the_package():
    assert issubclass(mlcx.InvalidFieldError, (mlcx.MlcxError, ValueError))
    assert issubclass(mlcx.ModelNotFoundError, mlcx.InvalidFieldError)
    assert issubclass(mlcx.ContextWindowError, mlcx.InvalidFieldError)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mlcx.Nope  # noqa: B018


def test_the_stub_types_every_exported_name():
    stub = Path(mlcx.__file__).with_suffix(".pyi")
    names = {
        alias.asname or alias.name
        for node in ast.walk(ast.parse(stub.read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert names == set(mlcx.__all__)
    assert set(mlcx.__all__) <= set(dir(mlcx))
