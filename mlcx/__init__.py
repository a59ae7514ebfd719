"""mlcx: compile LLMs with Apache TVM and run them on every device.

The Python library in the two shapes people already write (imported lazily: `import mlcx`
loads neither TVM nor a web framework until one of these is used):

    from mlcx import LLM, SamplingParams          # vLLM's offline API
    from mlcx import MLCEngine, AsyncMLCEngine    # MLC-LLM's (the OpenAI API in process)

and the errors a caller catches: InvalidFieldError (a bad request or value: what the server
answers with 400), ModelNotFoundError, ContextWindowError, QueueFullError, EngineFailedError,
ArtifactError, ModelSourceError, UnsupportedModelError, all but the last MlcxError's.
"""

from __future__ import annotations

import importlib
from typing import Any

from mlcx.errors import (
    ArtifactError,
    ContextWindowError,
    ImageError,
    InvalidFieldError,
    MaxTokensTooLargeError,
    MessagesError,
    MlcxError,
    ModelNotFoundError,
    ModelSourceError,
    PromptError,
    QueueFullError,
    UnsupportedModelError,
)

__version__ = "0.1.0"

# name -> the module that defines it, imported on first use (by name, so that the package
# face stays below every level it names: tests/test_layering.py; __init__.pyi types them)
_LAZY = {
    "LLM": "mlcx.runtime.api.llm",
    "RequestOutput": "mlcx.runtime.api.request_output",
    "CompletionOutput": "mlcx.runtime.api.request_output",
    "EmbeddingRequestOutput": "mlcx.runtime.api.request_output",
    "SamplingParams": "mlcx.runtime.sample.params",
    "MLCEngine": "mlcx.runtime.api.mlc_engine",
    "AsyncMLCEngine": "mlcx.runtime.api.async_mlc_engine",
    "EngineConfig": "mlcx.runtime.core.config",
    "LoraRequest": "mlcx.runtime.lora.request",
    "EngineFailedError": "mlcx.runtime.api.async_engine",
}

__all__ = [
    *_LAZY,
    "ArtifactError",
    "ContextWindowError",
    "ImageError",
    "InvalidFieldError",
    "MaxTokensTooLargeError",
    "MessagesError",
    "MlcxError",
    "ModelNotFoundError",
    "ModelSourceError",
    "PromptError",
    "QueueFullError",
    "UnsupportedModelError",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'mlcx' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
