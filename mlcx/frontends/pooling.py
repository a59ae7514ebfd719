"""How an embedding model turns its hidden states into one vector per text.

sentence-transformers folders say it in `modules.json` (a `Pooling` module with its
`1_Pooling/config.json`, a `Normalize` module when vectors are unit length); a folder without
them gets the architecture's default.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mlcx.errors import ModelSourceError

log = logging.getLogger(__name__)

POOLING_MODES = ("mean", "cls", "last")
# 1_Pooling/config.json's flags, by the mode each turns on
_ST_FLAGS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "last",
}


@dataclass(frozen=True)
class PoolingConfig:
    mode: str = "mean"
    normalize: bool = False
    # trained for Matryoshka truncation: the first k features are an embedding of their own
    matryoshka: bool = False

    def __post_init__(self) -> None:
        if self.mode not in POOLING_MODES:
            raise ValueError(f"pooling mode {self.mode!r} is not one of {', '.join(POOLING_MODES)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ModelSourceError(f"{path} is not readable JSON ({err})") from None


def _mode(folder: Path, module_path: str) -> str:
    config = _read(folder / module_path / "config.json")
    modes = [mode for flag, mode in _ST_FLAGS.items() if config.get(flag)]
    others = [
        k for k, v in config.items() if k.startswith("pooling_mode") and v and k not in _ST_FLAGS
    ]
    if len(modes) != 1 or others:
        raise ModelSourceError(
            f"{folder / module_path}/config.json: mlcx pools by exactly one of mean, CLS or last "
            f"token; this model asks for {sorted(set(modes) | set(others)) or 'none'}"
        )
    return modes[0]


def read_pooling(folder: Path, default: PoolingConfig) -> PoolingConfig:
    """The folder's sentence-transformers pooling, or `default` where it has none."""
    modules_file = folder / "modules.json"
    if not modules_file.exists():
        log.info("%s has no modules.json; pooling by the default %s", folder, default)
        return default
    modules = _read(modules_file)
    kinds = {str(m.get("type", "")).rsplit(".", 1)[-1]: m.get("path", "") for m in modules}
    mode = _mode(folder, kinds["Pooling"]) if "Pooling" in kinds else default.mode
    return PoolingConfig(mode, "Normalize" in kinds, default.matryoshka)
