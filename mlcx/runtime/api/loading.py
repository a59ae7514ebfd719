"""What the Python front doors (LLM, MLCEngine, AsyncMLCEngine) accept as a model, made into an
engine: an artifact directory, or a model (a preset, a Hugging Face folder, a .gguf) compiled
for the device into the JIT cache on first use, with slots for the LoRA adapters given."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.artifact.embedding_config import EMBED_TASK, artifact_task
from mlcx.runtime.api.embedder import Embedder
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine

# device= -> (the target a model is compiled for, the runner's device override)
DEVICES: dict[str, tuple[str, str | None]] = {
    "auto": ("cpu", None),  # an artifact runs on its own target
    "cpu": ("cpu", "cpu"),
    "cuda": ("cuda", "cuda"),
    "metal": ("metal", "metal"),
    "vulkan": ("vulkan", None),
    "webgpu": ("webgpu", None),
}
Adapters = Mapping[str, str | Path]


def adapter_pairs(lora: Adapters | None) -> tuple[tuple[str, str], ...]:
    """`lora` ({name: PEFT folder or GGUF adapter}) as EngineConfig takes it."""
    if lora is None:
        return ()
    if not isinstance(lora, Mapping):
        raise ValueError('lora must map adapter names to adapters: {"name": "path/to/adapter"}')
    return tuple((str(name), str(path)) for name, path in lora.items())


def open_model(
    model: str | Path,
    device: str = "auto",
    engine_config: EngineConfig | None = None,
    lora: Adapters | None = None,
    quiet: bool = True,
) -> Engine | Embedder:
    """An engine for `model` (an Embedder for an embedding model's artifact)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    target, override = DEVICES[device]
    config = engine_config or EngineConfig()
    adapters = adapter_pairs(lora) or config.lora
    config = replace(config, lora=adapters, device=config.device or override)
    path = str(model)
    if artifact_task(path) == EMBED_TASK:
        return Embedder(path)
    if not Artifact.is_artifact(path):
        path = str(_compile(path, target, adapters, quiet).path)
    if artifact_task(path) == EMBED_TASK:
        return Embedder(path)
    return Engine(path, config)


def _compile(model: str, target: str, adapters: tuple[tuple[str, str], ...], quiet: bool):
    from mlcx.compile.jit import resolve_artifact
    from mlcx.runtime.lora.fit import slots_for

    return resolve_artifact(
        model, quiet=quiet, lora_slots=slots_for(model, adapters), target=target
    )
