"""A compiled artifact directory and its `mlcx-config.json`.

Layout:
    mlcx-config.json        this file's ArtifactConfig
    <library>               the compiled model (shared library, dylib, plan, ...; per target)
    params/index.json       weight index with a sha256 per shard (see weight_shards)
    params/shard-*.bin
    tokenizer.json, mlcx-tokenizer.json
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from mlcx.artifact.state_tensors import (
    StateTensor,
    check_state_tensors,
    parse_state_tensors,
    state_layers,
    state_slot_bytes,
)
from mlcx.errors import ArtifactError
from mlcx.formats import FORMAT_VERSION, check_format_version
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.kv_layout import KV_CACHE_DTYPES, KVLayout
from mlcx.kernels.lora_layout import LoraSpec

CONFIG_FILE = "mlcx-config.json"
KV_DTYPES = tuple(KV_CACHE_DTYPES)  # what the KV pages may be stored in
CPU_TARGET = "cpu"  # the one target whose kernels are mlcx's CPU kernels; every other's are GPU


@dataclass(frozen=True)
class ArtifactConfig:
    model_name: str
    architecture: str
    model: DecoderConfig
    quantization: str
    activation_dtype: str
    target: str
    tvm_target: dict[str, Any]
    library: str
    runtime: str  # what executes it: "tvm" (Relax VM), "wgpu" (WebGPU plan), "app" (mobile)
    context_window: int
    prefill_chunk: int
    page_size: int
    sampling: dict[str, Any] = field(default_factory=dict)
    weight_formats: dict[str, str] = field(default_factory=dict)
    # where the model came from (a preset name or an absolute path), so that `mlcx tune` can
    # take the artifact; and the tuning database it was compiled with, if any
    source: str = ""
    tuning_db: str | None = None
    kv_dtype: str = ""  # of the KV pages; "" (artifacts from before it was a choice): activations'
    # cpu: which kernels compute the linear layers (LinearKernels); None on other targets
    linear_kernels: str | None = None
    # cuda: decode batches up to this many rows replay CUDA graphs (runtime.backends.decode_graph)
    decode_graph_batch: int | None = None
    # LoRA adapter slots the step functions take (`mlcx compile --lora-slots`), or None
    lora: LoraSpec | None = None
    lora_merged: str | None = None  # the adapter merged into the weights (`--lora DIR`)
    # hybrid models: each state layer's per-sequence tensors, in the step functions' order
    # (artifact/state_tensors.py); empty for a pure transformer
    state_tensors: tuple[StateTensor, ...] = ()
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if self.page_size <= 0 or self.prefill_chunk <= 0 or self.context_window <= 0:
            raise ValueError("page_size, prefill_chunk and context_window must be positive")
        if self.linear_kernels not in (None, *(k.value for k in LinearKernels)):
            choices = ", ".join(k.value for k in LinearKernels)
            raise ValueError(f"linear_kernels {self.linear_kernels!r} is not one of {choices}")
        if self.kv_dtype not in ("", *KV_DTYPES):
            raise ValueError(
                f"kv_dtype {self.kv_dtype!r} is not one of {', '.join(KV_DTYPES)}; recompile "
                "the model (`mlcx compile --kv-dtype`)"
            )
        # the compile side may hand dicts, as the config file holds them
        object.__setattr__(self, "state_tensors", parse_state_tensors(self.state_tensors))
        check_state_tensors(self.state_tensors, self.model.num_layers)

    @property
    def cache_dtype(self) -> str:
        return self.kv_dtype or self.activation_dtype

    @property
    def kv_layouts(self) -> tuple[KVLayout, ...]:
        """The pages of each layer that owns pages (DecoderConfig.kv_layers, less the state
        layers), in the order the compiled functions take them: what runners allocate. Layers
        may differ in head geometry (Gemma 4's global layers); a layer reading another's pages
        has none, nor has a state layer."""
        m = self.model
        kind = "cpu" if self.target == CPU_TARGET else "gpu"
        dtypes = (self.page_size, self.activation_dtype, self.cache_dtype, kind)
        states = set(state_layers(self.state_tensors))
        return tuple(
            KVLayout(m.num_heads, m.layer_kv_heads(i), m.layer_head_dim(i), *dtypes)
            for i in m.kv_layers
            if i not in states
        )

    @property
    def kv_layout(self) -> KVLayout:
        """The first KV layer's pages: every layer's, unless the model's layers differ in head
        geometry (allocate from kv_layouts)."""
        return self.kv_layouts[0]

    @property
    def kv_layers(self) -> int:
        """Layers with KV pages (one page tensor each): all but the state layers and the
        layers reading another's pages."""
        return len(self.kv_layouts)

    @property
    def kv_block_bytes(self) -> int:
        """Device bytes of one KV block (page_size tokens) across the KV layers: what every
        runner allocates per block, and what budgets count in."""
        return sum(layout.pages_bytes(1) for layout in self.kv_layouts)

    @property
    def state_slot_bytes(self) -> int:
        """Device bytes of one sequence's state (one state slot); 0 without state layers."""
        return state_slot_bytes(self.state_tensors)

    def to_json(self) -> str:
        data = asdict(self)
        data["model"] = self.model.to_dict()
        data["kv_block_bytes"] = self.kv_block_bytes  # derived; for readers in other languages
        data["state_slot_bytes"] = self.state_slot_bytes
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str, path: Path | str = CONFIG_FILE) -> ArtifactConfig:
        data = json.loads(text)
        if data.get("task", "generate") != "generate":
            raise ArtifactError(
                f"{path} is an embedding model's artifact (task {data['task']!r}): it embeds "
                "text (LLM.embed, POST /v1/embeddings) and cannot generate"
            )
        try:
            check_format_version(data, str(path), "recompile the model with this mlcx")
        except ValueError as err:
            raise ArtifactError(str(err)) from None
        known = {f.name for f in fields(cls)}
        data["model"] = DecoderConfig.from_dict(data["model"])
        if data.get("lora") is not None:
            data["lora"] = LoraSpec.from_dict(data["lora"])
        return cls(**{k: v for k, v in data.items() if k in known})


def read_config(path: Path, config_type):
    """`config_type.from_json` of the artifact directory `path`'s config file; a malformed
    one is an ArtifactError saying so."""
    config_path = path / CONFIG_FILE
    try:
        return config_type.from_json(config_path.read_text(), config_path)
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{config_path} is malformed ({err}); recompile the model") from None


class ArtifactFiles:
    """Where an artifact directory keeps its library and weights (generative or embedding)."""

    path: Path
    config: Any  # ArtifactConfig or EmbeddingArtifactConfig: each names its `library`

    @property
    def library_path(self) -> Path:
        return self.path / self.config.library

    @property
    def params_dir(self) -> Path:
        return self.path / "params"


class Artifact(ArtifactFiles):
    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not (self.path / CONFIG_FILE).exists():
            raise ArtifactError(
                f"{self.path} is not an mlcx artifact ({CONFIG_FILE} missing); create one with "
                "`mlcx compile MODEL -o DIR`"
            )
        self.config = read_config(self.path, ArtifactConfig)

    @staticmethod
    def is_artifact(path: Path | str) -> bool:
        return (Path(path) / CONFIG_FILE).exists()
