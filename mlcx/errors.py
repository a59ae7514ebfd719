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


class InvalidFieldError(MlcxError, ValueError):
    """A request, or a value it gave, is invalid: what the server answers with 400 and the
    in-process engines (MLCEngine, LLM) raise. `param` names the field it is about (a
    `SamplingParams` field, "prompt" or "messages") and `code` is OpenAI's error code where
    one applies, so that a server can report both."""

    param: str | None = None
    code: str | None = None

    def __init__(self, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        if param is not None:
            self.param = param
        if code is not None:
            self.code = code


class ModelNotFoundError(InvalidFieldError):
    """A request names a model (or a LoRA adapter) that is not served: a server's 404."""

    param = "model"
    code = "model_not_found"


class PromptError(InvalidFieldError):
    """A prompt the engine cannot run: empty, or with token ids outside the vocabulary."""

    param = "prompt"


class MessagesError(InvalidFieldError):
    """Chat messages that are malformed, or that the model's chat template rejects."""

    param = "messages"


class ContextWindowError(InvalidFieldError):
    """A prompt (plus requested tokens) does not fit in the model's context window."""

    param = "prompt"
    code = "context_length_exceeded"


class MaxTokensTooLargeError(ContextWindowError):
    """The prompt fits the context window, but not with max_tokens more: lower max_tokens."""

    param = "max_tokens"


class ToolchainError(MlcxError):
    """An external tool that a target needs (clang, lld, nvcc, ...) is not installed."""


class QueueFullError(MlcxError):
    """The engine's waiting queue is full; the request was not queued (retry later)."""


class ImageError(InvalidFieldError):
    """An image a request gave cannot be used (not an image, corrupt, empty, too large, or a
    model without an image encoder); `param` names the message part it came from."""

    param = "messages"
