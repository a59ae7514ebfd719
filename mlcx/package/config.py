"""The package config (JSON) that `mlcx package` reads, validated once here.

{
  "device": "iphone",                 # a mobile target: iphone | android
  "library": "combined",              # combined (one archive) | per-model
  "app": {"name": "mlcx Chat", "id": "org.mlcx.chat"},   # optional: the --app projects' name
                                      # and application / bundle id
  "models": [
    {
      "id": "smollm2",                # unique; names the bundle folder and the library
      "source": "smollm2-135m",       # preset, HF folder or .gguf (relative to this file)
      "quantization": "q4f16",        # optional: the target's default
      "bundle_weights": true,         # false: the app downloads params/ (see weights_url)
      "estimated_memory_bytes": 4e8,  # optional: computed from weights + full KV cache
      "context_window": 2048,         # optional: cap the model's context window
      "weights_url": "https://...",   # optional, for apps that download weights
      "fallback_quantization": "q4f32"  # optional (--app): an f32 WebGPU variant for GPUs
                                        # without shader-f16
    }
  ]
}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlcx.compile.encoder import VISION_PREFIX
from mlcx.quantization.schemes import QUANTIZATIONS
from mlcx.targets.registry import TARGETS

LIBRARY_LAYOUTS = ("combined", "per-model")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_APP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}")
# valid for both stores: Android wants each segment to start with a letter, iOS allows no "_"
_APP_ID = re.compile(r"[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+")
_MODEL_KEYS = {
    "id",
    "source",
    "quantization",
    "bundle_weights",
    "estimated_memory_bytes",
    "context_window",
    "weights_url",
    "fallback_quantization",
}


def package_devices() -> list[str]:
    """Targets whose artifacts an app links (runtime "app")."""
    return [name for name, target in TARGETS.items() if target.runtime == "app"]


@dataclass(frozen=True)
class PackageModel:
    id: str
    source: str
    quantization: str | None = None
    bundle_weights: bool = True
    estimated_memory_bytes: int | None = None
    context_window: int | None = None
    weights_url: str | None = None
    fallback_quantization: str | None = None

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id):
            raise ValueError(f"model id {self.id!r}: use letters, digits, '.', '_' or '-'")
        for key in ("quantization", "fallback_quantization"):
            value = getattr(self, key)
            if value is not None and value not in QUANTIZATIONS:
                raise ValueError(
                    f"model {self.id}: unknown {key} {value!r} "
                    f"(choose one of: {', '.join(QUANTIZATIONS)})"
                )
        for key in ("estimated_memory_bytes", "context_window"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"model {self.id}: {key} must be a positive integer")
        if not isinstance(self.bundle_weights, bool):
            raise ValueError(f"model {self.id}: bundle_weights must be true or false")

    @property
    def system_lib_prefix(self) -> str:
        """The model's symbol prefix in the app: its id as a C identifier."""
        name = re.sub(r"[^A-Za-z0-9_]", "_", self.id)
        return ("m_" if name[0].isdigit() else "") + name + "_"


@dataclass(frozen=True)
class AppIdentity:
    """The app projects' display name and application (Android) / bundle (iOS) id."""

    name: str = "mlcx Chat"
    id: str = "org.mlcx.chat"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _APP_NAME.fullmatch(self.name):
            raise ValueError(
                f"app name {self.name!r}: up to 40 letters, digits, spaces, '.', '_' or '-'"
            )
        if not isinstance(self.id, str) or not _APP_ID.fullmatch(self.id):
            raise ValueError(
                f"app id {self.id!r}: two or more dot-separated lowercase words of letters and "
                "digits, like org.example.chat"
            )


@dataclass(frozen=True)
class PackageConfig:
    device: str
    models: tuple[PackageModel, ...]
    library: str = "combined"
    app: AppIdentity = AppIdentity()

    def __post_init__(self) -> None:
        if self.device not in package_devices():
            raise ValueError(
                f"device {self.device!r} cannot be packaged; choose one of: "
                f"{', '.join(package_devices())}"
            )
        if self.library not in LIBRARY_LAYOUTS:
            raise ValueError(f"library must be one of {LIBRARY_LAYOUTS}, not {self.library!r}")
        if not self.models:
            raise ValueError("the package lists no models")
        for attr in ("id", "system_lib_prefix"):
            values = [getattr(m, attr) for m in self.models]
            if len(set(values)) != len(values):
                raise ValueError(f"model ids must be unique (also as symbol prefixes): {values}")
        prefixes = {m.system_lib_prefix: m.id for m in self.models}
        for model in self.models:
            if (clash := prefixes.get(model.system_lib_prefix + VISION_PREFIX)) is not None:
                raise ValueError(
                    f"model ids {model.id!r} and {clash!r}: the symbols of {clash!r} would "
                    f"clash with the image encoder's of {model.id!r} "
                    f"({model.system_lib_prefix}{VISION_PREFIX}); rename {clash!r}"
                )

    @classmethod
    def from_dict(cls, data: dict[str, Any], base_dir: Path) -> PackageConfig:
        if not isinstance(data, dict) or not isinstance(data.get("models"), list):
            raise ValueError("a package config is a JSON object with a 'models' list")
        models = tuple(_model(entry, base_dir) for entry in data["models"])
        app = data.get("app", {})
        if not isinstance(app, dict) or set(app) - {"name", "id"}:
            raise ValueError(f"'app' is an object with 'name' and 'id', not {app!r}")
        device, library = str(data.get("device", "")), str(data.get("library", "combined"))
        return cls(device, models, library, AppIdentity(**app))

    @classmethod
    def read(cls, path: Path) -> PackageConfig:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"cannot read package config {path}: {err}") from None
        return cls.from_dict(data, path.parent)


def _model(entry: Any, base_dir: Path) -> PackageModel:
    if not isinstance(entry, dict) or "id" not in entry or "source" not in entry:
        raise ValueError(f"each model needs an 'id' and a 'source': {entry!r}")
    unknown = set(entry) - _MODEL_KEYS
    if unknown:
        raise ValueError(f"model {entry['id']}: unknown keys {sorted(unknown)}")
    source = str(entry["source"])
    local = base_dir / source
    fields = {**entry, "source": str(local) if local.exists() else source}
    memory = fields.get("estimated_memory_bytes")
    if isinstance(memory, float) and memory.is_integer():  # JSON writes 4e8 as a float
        fields["estimated_memory_bytes"] = int(memory)
    return PackageModel(**fields)
