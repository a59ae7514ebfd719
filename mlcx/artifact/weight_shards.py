"""Weight shards of a compiled artifact: raw little-endian arrays plus a JSON index.

params/index.json lists each shard with its size and sha256, and each tensor with its shard,
byte offset, shape and dtype, in the order the compiled functions take them. The format is
plain bytes so the browser runtime can fetch and slice shards as ArrayBuffers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes  # noqa: F401  (bfloat16 dtype names)
import numpy as np

from mlcx.errors import ArtifactError

INDEX = "index.json"
SHARD_BYTES = 32 << 20
ALIGN = 64


@dataclass(frozen=True)
class TensorRecord:
    name: str
    shape: tuple[int, ...]
    dtype: str
    shard: int
    offset: int
    nbytes: int


class ShardWriter:
    """Appends arrays to shards of about SHARD_BYTES, hashing as it writes."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.records: list[TensorRecord] = []
        self.shards: list[dict] = []
        self._file = None
        self._hash = hashlib.sha256()
        self._size = 0

    def _roll(self) -> None:
        self._close_shard()
        name = f"shard-{len(self.shards):05d}.bin"
        self.shards.append({"file": name})
        self._file = open(self.folder / name, "wb")  # noqa: SIM115 (closed in _close_shard)

    def _close_shard(self) -> None:
        if self._file is None:
            return
        self._file.close()
        self.shards[-1].update(nbytes=self._size, sha256=self._hash.hexdigest())
        self._file, self._hash, self._size = None, hashlib.sha256(), 0

    def add(self, name: str, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array).tobytes()
        if self._file is None or (self._size and self._size + len(data) > SHARD_BYTES):
            self._roll()
        pad = -self._size % ALIGN
        self._write(b"\0" * pad)
        record = TensorRecord(
            name,
            tuple(int(d) for d in array.shape),
            str(array.dtype),
            len(self.shards) - 1,
            self._size,
            len(data),
        )
        self._write(data)
        self.records.append(record)

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        self._hash.update(data)
        self._size += len(data)

    def finish(self) -> Path:
        self._close_shard()
        index = {"shards": self.shards, "tensors": [r.__dict__ for r in self.records]}
        path = self.folder / INDEX
        path.write_text(json.dumps(index, indent=1))
        return path


def read_index(folder: Path) -> tuple[list[dict], list[TensorRecord]]:
    path = folder / INDEX
    try:
        index = json.loads(path.read_text())
        records = [TensorRecord(**{**t, "shape": tuple(t["shape"])}) for t in index["tensors"]]
        return index["shards"], records
    except FileNotFoundError:
        raise ArtifactError(f"{path} is missing; recompile the model with `mlcx compile`") from None
    except (ValueError, KeyError, TypeError) as err:
        raise ArtifactError(f"{path} is malformed ({err}); recompile the model") from None


def verify_shard(folder: Path, shard: dict) -> None:
    path = folder / shard["file"]
    if not path.exists():
        raise ArtifactError(f"weight shard {path} is missing; recompile the model")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    if digest.hexdigest() != shard["sha256"]:
        raise ArtifactError(
            f"weight shard {path} does not match its sha256 in {INDEX} (corrupted or "
            "replaced); recompile the model or restore the file"
        )


def load_arrays(folder: Path, verify: bool = True) -> list[tuple[str, np.ndarray]]:
    """Every tensor as a read-only view of its memory-mapped shard, in index order."""
    shards, records = read_index(folder)
    maps = []
    for shard in shards:
        if verify:
            verify_shard(folder, shard)
        maps.append(np.memmap(folder / shard["file"], dtype=np.uint8, mode="r"))
    out = []
    for r in records:
        raw = maps[r.shard][r.offset : r.offset + r.nbytes]
        out.append((r.name, raw.view(np.dtype(r.dtype)).reshape(r.shape)))
    return out
