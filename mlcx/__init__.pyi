# The package face's types (mlcx/__init__.py imports these lazily, by name).
from mlcx.errors import ArtifactError as ArtifactError
from mlcx.errors import ContextWindowError as ContextWindowError
from mlcx.errors import ImageError as ImageError
from mlcx.errors import InvalidFieldError as InvalidFieldError
from mlcx.errors import MaxTokensTooLargeError as MaxTokensTooLargeError
from mlcx.errors import MessagesError as MessagesError
from mlcx.errors import MlcxError as MlcxError
from mlcx.errors import ModelNotFoundError as ModelNotFoundError
from mlcx.errors import ModelSourceError as ModelSourceError
from mlcx.errors import PromptError as PromptError
from mlcx.errors import QueueFullError as QueueFullError
from mlcx.errors import UnsupportedModelError as UnsupportedModelError
from mlcx.runtime.api.async_engine import EngineFailedError as EngineFailedError
from mlcx.runtime.api.async_mlc_engine import AsyncMLCEngine as AsyncMLCEngine
from mlcx.runtime.api.llm import LLM as LLM
from mlcx.runtime.api.mlc_engine import MLCEngine as MLCEngine
from mlcx.runtime.api.request_output import CompletionOutput as CompletionOutput
from mlcx.runtime.api.request_output import EmbeddingRequestOutput as EmbeddingRequestOutput
from mlcx.runtime.api.request_output import RequestOutput as RequestOutput
from mlcx.runtime.core.config import EngineConfig as EngineConfig
from mlcx.runtime.lora.request import LoraRequest as LoraRequest
from mlcx.runtime.sample.params import SamplingParams as SamplingParams

__version__: str
__all__: list[str]
