"""`bundle/mlcx-app-config.json`: what an iOS or Android app reads to find and load each model.

Paths are relative to the folder holding the app config (`bundle/`), except `library` and
`shared_library`, which are relative to the package root (`dist/`): libraries are linked into
the app at build time, the bundle is copied into it as resources. docs/packaging.md describes
how an app uses each field. A model with an image encoder has a `vision` entry too; a
text-only model's entry has no such key, as before there was one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from mlcx.artifact.encoder import Preprocess

# The functions each model's VM exposes; an app calls them with TVM's Relax VM.
from mlcx.kernels.step_params import EMBED_IMAGE, ENTRY_FUNCTIONS, PREFILL_IMAGE

APP_CONFIG_FILE = "mlcx-app-config.json"
APP_CONFIG_VERSION = 1


@dataclass(frozen=True)
class AppWeights:
    bundled: bool
    index: str  # params/index.json: shard files with sizes and sha256 (always bundled)
    bytes: int
    url: str | None = None  # where an app downloads params/ from when not bundled


@dataclass(frozen=True)
class AppVision:
    """The image encoder of a model with images, linked into the model's library."""

    model_lib: str  # its system-lib prefix: the app opens it with SystemLib(model_lib)
    config: str  # vision/encoder.json (EncoderConfig; `library` = the dist-relative library)
    weights: AppWeights  # vision/params/: the weights tuple embed_image takes last
    inputs: tuple[str, ...]  # embed_image's inputs before the weights (float32)
    preprocess: Preprocess  # how an image becomes `pixels` [3, size, size]
    image_token_id: int
    tokens_per_image: int  # rows embed_image returns per image (0: dynamic resolution)
    dtype: str  # the encoder's math and weights; pixels and rows are float32
    function: str = EMBED_IMAGE  # the encoder VM's function: inputs..., params -> rows
    prefill_function: str = PREFILL_IMAGE  # the model VM's prefill that takes those rows


@dataclass(frozen=True)
class AppModel:
    id: str
    model_lib: str  # system library prefix: the app opens the model with SystemLib(model_lib)
    library: str
    shared_library: str | None
    bundle_dir: str
    config: str  # the model's mlcx-config.json (dims, page size, sampling defaults)
    tokenizer: str  # tokenizer.json (HF tokenizers format)
    tokenizer_config: str  # mlcx-tokenizer.json (chat template, BOS/EOS)
    weights: AppWeights
    estimated_memory_bytes: int
    context_window: int
    quantization: str
    activation_dtype: str
    device: str  # TVM device: "metal" or "opencl"
    entry_functions: tuple[str, ...] = ENTRY_FUNCTIONS
    vision: AppVision | None = None  # the image encoder; None: text only


@dataclass(frozen=True)
class AppConfig:
    device: str  # the mlcx target: "iphone" or "android"
    library_layout: str  # "combined" or "per-model"
    libraries: tuple[str, ...]
    models: tuple[AppModel, ...]
    format_version: int = APP_CONFIG_VERSION

    def to_json(self) -> str:
        data = asdict(self)
        for model in data["models"]:
            if model["vision"] is None:
                del model["vision"]  # a text-only entry keeps the format it always had
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> AppConfig:
        data = json.loads(text)
        if data.get("format_version") != APP_CONFIG_VERSION:
            raise ValueError(f"app config format {data.get('format_version')} is not supported")
        models = tuple(
            AppModel(
                **{
                    **m,
                    "weights": AppWeights(**m["weights"]),
                    "entry_functions": tuple(m["entry_functions"]),
                    "vision": _vision(m.get("vision")),
                }
            )
            for m in data["models"]
        )
        return cls(data["device"], data["library_layout"], tuple(data["libraries"]), models)


def _vision(data: dict | None) -> AppVision | None:
    if data is None:
        return None
    return AppVision(
        **{
            **data,
            "weights": AppWeights(**data["weights"]),
            "inputs": tuple(data["inputs"]),
            "preprocess": Preprocess(**data["preprocess"]),
        }
    )
