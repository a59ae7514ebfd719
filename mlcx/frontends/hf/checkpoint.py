"""A Hugging Face model folder: config.json plus one or many safetensors shards.

Shards are memory-mapped by safetensors and read one tensor at a time, so conversion never
holds a whole checkpoint in memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy so safetensors can return it)
import numpy as np
from safetensors import SafetensorError, safe_open

from mlcx.errors import ModelSourceError
from mlcx.frontends.tensors import SourceTensor

INDEX_FILE = "model.safetensors.index.json"


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelSourceError(f"{path} is missing; a model folder needs it") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelSourceError(f"{path} is not valid JSON ({err}); restore the file") from None
    if not isinstance(data, dict):
        raise ModelSourceError(f"{path} must hold a JSON object")
    return data


class HFCheckpoint:
    def __init__(self, folder: Path):
        self.folder = folder
        self.config = read_json(folder / "config.json")
        self._handles: dict[Path, Any] = {}
        self._where = self._index()

    def _index(self) -> dict[str, Path]:
        index = self.folder / INDEX_FILE
        if index.exists():
            weight_map = read_json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise ModelSourceError(f"{index} has no 'weight_map'; restore the file")
            return {name: self.folder / shard for name, shard in weight_map.items()}
        shards = sorted(self.folder.glob("*.safetensors"))
        if not shards:
            raise ModelSourceError(
                f"no *.safetensors files in {self.folder}; mlcx reads safetensors checkpoints "
                "(convert .bin checkpoints with transformers' save_pretrained first)"
            )
        # safe_open handles expose keys() but are not mappings
        return {n: shard for shard in shards for n in self._open(shard).keys()}  # noqa: SIM118

    def _open(self, shard: Path):
        if shard not in self._handles:
            if not shard.exists():
                raise ModelSourceError(f"shard {shard} named in {INDEX_FILE} is missing")
            try:
                self._handles[shard] = safe_open(str(shard), framework="numpy")
            except (SafetensorError, OSError) as err:
                raise ModelSourceError(
                    f"{shard} is not a readable safetensors file ({err}); it may be truncated, "
                    "download it again"
                ) from None
        return self._handles[shard]

    def names(self) -> list[str]:
        return list(self._where)

    def get(self, name: str) -> SourceTensor:
        if name not in self._where:
            raise ModelSourceError(f"tensor {name!r} not found in {self.folder}")
        handle = self._open(self._where[name])
        shape = tuple(handle.get_slice(name).get_shape())

        def load() -> np.ndarray:
            try:
                return handle.get_tensor(name)
            except (SafetensorError, OSError, ValueError) as err:
                raise ModelSourceError(
                    f"cannot read tensor {name!r} from {self._where[name]} ({err}); the file "
                    "may be truncated"
                ) from None

        return SourceTensor(name, shape, None, load, lambda: load().astype(np.float32))
