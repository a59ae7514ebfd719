"""Reading Hugging Face config.json values, with the aliases real checkpoints use."""

from __future__ import annotations

import logging
from typing import Any

from mlcx.errors import UnsupportedModelError

log = logging.getLogger(__name__)


class HFConfigReader:
    def __init__(self, config: dict[str, Any], arch: str):
        self.config = config
        self.arch = arch

    def get(self, *names: str, default: Any = None, required: bool = False) -> Any:
        """The first of `names` present; later names are aliases, and using one is logged."""
        for i, name in enumerate(names):
            if self.config.get(name) is not None:
                if i:
                    log.info("%s config: using %r for %r", self.arch, name, names[0])
                return self.config[name]
        if required:
            raise UnsupportedModelError(
                f"{self.arch} config.json lacks {names[0]!r}; the checkpoint is incomplete"
            )
        if default is not None:
            log.info("%s config: %r not set, using %r", self.arch, names[0], default)
        return default

    def rope(self) -> tuple[float, dict[str, Any]]:
        """(rope_theta, rope_scaling); transformers 5 keeps both in `rope_parameters`."""
        params = dict(self.config.get("rope_parameters") or {})
        scaling = dict(self.config.get("rope_scaling") or params)
        theta = self.config.get("rope_theta") or params.get("rope_theta") or 10000.0
        if "type" in scaling and "rope_type" not in scaling:
            log.info("%s config: rope_scaling 'type' taken as 'rope_type'", self.arch)
            scaling["rope_type"] = scaling.pop("type")
        scaling.pop("rope_theta", None)
        kind = scaling.get("rope_type", "default")
        if kind == "default":
            return float(theta), {}
        if kind != "llama3":
            raise UnsupportedModelError(
                f"{self.arch}: RoPE scaling {kind!r} is not supported (supported: default, llama3)"
            )
        return float(theta), scaling


def hf_architecture(config: dict[str, Any]) -> str:
    names = config.get("architectures") or []
    if not names:
        return str(config.get("model_type", ""))
    return str(names[0])
