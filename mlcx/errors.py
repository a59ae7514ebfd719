"""Errors a user can act on.

Every `MlcxError` message names the problem and what to do about it; the CLI prints it as one
line without a traceback, and the server maps it to a 4xx response.
"""


class MlcxError(Exception):
    """Base class for user-facing errors."""


class ModelSourceError(MlcxError):
    """The model path or id cannot be read (missing, truncated or malformed file)."""


class UnsupportedModelError(MlcxError):
    """The model's architecture, tensor type or configuration is not supported."""


class ArtifactError(MlcxError):
    """A compiled artifact is missing, incomplete or corrupted."""


class ContextWindowError(MlcxError):
    """A prompt (plus requested tokens) does not fit in the model's context window."""


class ToolchainError(MlcxError):
    """An external tool that a target needs (clang, lld, nvcc, ...) is not installed."""


class QueueFullError(MlcxError):
    """The engine's waiting queue is full; the request was not queued (retry later)."""
