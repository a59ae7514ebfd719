"""The optional extras of `pip install mlcx[...]`, and the one way code imports from them.

The plain install runs every front door (compile, generate, chat, serve, web, package, bench);
an extra is for what is truly optional. `require` imports an extra's module or raises an
`ExtraMissingError` whose one line names the extra to install: never an ImportError traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from mlcx.errors import MlcxError

# extra -> what it adds (pyproject.toml's [project.optional-dependencies] says which packages)
EXTRAS = {
    "replicas": "engine replicas on Ray Serve (`mlcx serve --replicas N`)",
    "bench": "driving headless Chromium with Playwright (`mlcx bench web`)",
    "test": "the test suite's references (transformers, torch, openai, ...)",
}


class ExtraMissingError(MlcxError):
    """An optional extra is not installed."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """`import module`, or an ExtraMissingError saying `pip install 'mlcx[extra]'`."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ExtraMissingError(
            f"{purpose} needs the optional extra '{extra}' ({module} is not installed): "
            f"pip install 'mlcx[{extra}]'"
        ) from None
