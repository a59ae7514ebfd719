"""An embedding model's artifact: the same directory layout as a generative model's (library,
params/, tokenizer files), with an `mlcx-config.json` whose `task` is "embed".

The compiled library exports one function, `embed` (mlcx.frontends.nn.embedding_model), and
no KV cache: the runtime's Embedder loads it, the chat engine refuses it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from mlcx.artifact.config import CONFIG_FILE, ArtifactFiles, read_config
from mlcx.errors import ArtifactError
from mlcx.formats import FORMAT_VERSION, check_format_version
from mlcx.frontends.pooling import PoolingConfig

EMBED_TASK = "embed"


@dataclass(frozen=True)
class EmbeddingArtifactConfig:
    model_name: str
    architecture: str
    model: dict[str, Any]  # the architecture's config, as recorded
    hidden_size: int
    max_tokens: int  # tokens per text, special tokens included (the model's positions)
    pooling: PoolingConfig
    quantization: str
    activation_dtype: str
    target: str
    tvm_target: dict[str, Any]
    library: str
    runtime: str
    weight_formats: dict[str, str] = field(default_factory=dict)
    source: str = ""
    task: str = EMBED_TASK
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if self.hidden_size <= 0 or self.max_tokens <= 0:
            raise ValueError("hidden_size and max_tokens must be positive")
        if self.task != EMBED_TASK:
            raise ValueError(f"task {self.task!r} is not {EMBED_TASK!r}")

    def to_json(self) -> str:
        data = asdict(self)
        data["pooling"] = self.pooling.to_dict()
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str, path: Path | str = CONFIG_FILE) -> EmbeddingArtifactConfig:
        data = json.loads(text)
        try:
            check_format_version(data, str(path), "recompile the model with this mlcx")
        except ValueError as err:
            raise ArtifactError(str(err)) from None
        known = {f.name for f in fields(cls)}
        data["pooling"] = PoolingConfig(**data["pooling"])
        return cls(**{k: v for k, v in data.items() if k in known})


def artifact_task(path: Path | str) -> str | None:
    """ "embed" or "generate" for an artifact directory; None where `path` is not one."""
    config_path = Path(path) / CONFIG_FILE
    if not config_path.is_file():
        return None
    try:
        return str(json.loads(config_path.read_text()).get("task", "generate"))
    except (OSError, json.JSONDecodeError):
        return "generate"  # the generative reader says what is wrong with it


class EmbeddingArtifact(ArtifactFiles):
    def __init__(self, path: Path | str):
        self.path = Path(path)
        if artifact_task(self.path) != EMBED_TASK:
            raise ArtifactError(
                f"{self.path} is not an embedding model artifact; compile an embedding model "
                "(a BERT or Qwen3-Embedding folder) with `mlcx compile MODEL -o DIR`"
            )
        self.config = read_config(self.path, EmbeddingArtifactConfig)
