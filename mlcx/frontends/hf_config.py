"""Reading Hugging Face config.json values, with the aliases real checkpoints use."""

from __future__ import annotations

import logging
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.kernels.rope_scaling import longrope_attention_factor, yarn_attention_factor

log = logging.getLogger(__name__)


class HFConfigReader:
    def __init__(self, config: dict[str, Any], arch: str, outer: dict[str, Any] | None = None):
        self.config = config
        self.arch = arch
        # the whole config.json where `config` is its text model's part (multimodal models)
        self.outer = config if outer is None else outer

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
        """(rope_theta, rope_scaling); transformers 5 keeps both in `rope_parameters`, per
        layer kind in models with local and global layers (the global one is the model's;
        rules.layers.local_rope reads the local one)."""
        params = dict(self.config.get("rope_parameters") or {})
        params = dict(params.get("full_attention", params))
        scaling = dict(self.config.get("rope_scaling") or params)
        theta = self.config.get("rope_theta") or params.get("rope_theta") or 10000.0
        if "type" in scaling and "rope_type" not in scaling:
            log.info("%s config: rope_scaling 'type' taken as 'rope_type'", self.arch)
            scaling["rope_type"] = scaling.pop("type")
        scaling.pop("rope_theta", None)
        kind = scaling.get("rope_type", "default")
        if kind not in _SCALINGS:
            raise UnsupportedModelError(
                f"{self.arch}: RoPE scaling {kind!r} is not supported "
                f"(supported: {', '.join(_SCALINGS)})"
            )
        return float(theta), _SCALINGS[kind](self, scaling)

    def rotary_dim(self, head_dim: int) -> int:
        """The features of each head RoPE rotates: head_dim x partial_rotary_factor (top level,
        or in `rope_parameters` as transformers 5 keeps it), truncated as transformers does;
        0 for the whole head."""
        params = self.config.get("rope_parameters") or {}
        factor = self.config.get("partial_rotary_factor") or params.get("partial_rotary_factor")
        if factor is None or factor == 1.0:
            return 0
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor < 1:
            raise ValueError(
                f"{self.arch}: partial_rotary_factor must be a number in (0, 1], got {factor!r}; "
                "fix config.json"
            )
        dim = int(head_dim * factor)
        if dim <= 0 or dim % 2:
            raise ValueError(
                f"{self.arch}: partial_rotary_factor {factor} x head_dim {head_dim} gives "
                f"{dim} rotary features; RoPE needs a positive even number, fix config.json"
            )
        return dim

    def _original(self, scaling: dict[str, Any]) -> int:
        """The pretraining context of a scaled RoPE; transformers falls back to
        max_position_embeddings where neither rope_scaling nor the config names it."""
        original = scaling.get("original_max_position_embeddings") or self.get(
            "original_max_position_embeddings", "max_position_embeddings", required=True
        )
        return int(original)

    def _number(self, scaling: dict[str, Any], name: str, default: float | None = None) -> float:
        value = scaling.get(name)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            kind = scaling.get("rope_type")
            raise UnsupportedModelError(
                f"{self.arch}: {kind} RoPE scaling needs a positive number {name!r}, got "
                f"{value!r}; fix rope_scaling in config.json"
            )
        return float(value)

    def _longrope(self, scaling: dict[str, Any]) -> dict[str, Any]:
        """Both factor lists and the cos/sin scale; rope_for_context picks the factors."""
        original = self._original(scaling)
        for name in ("short_factor", "long_factor"):
            if not isinstance(scaling.get(name), list):
                raise UnsupportedModelError(f"{self.arch}: longrope scaling lacks {name!r}")
        factor = scaling.get("factor") or self.get("max_position_embeddings", required=True) / int(
            original
        )
        attention = scaling.get("attention_factor")
        return {
            "rope_type": "longrope",
            "short_factor": [float(f) for f in scaling["short_factor"]],
            "long_factor": [float(f) for f in scaling["long_factor"]],
            "original_max_position_embeddings": int(original),
            "attention_factor": float(
                attention or longrope_attention_factor(float(factor), int(original))
            ),
        }

    def _llama3(self, scaling: dict[str, Any]) -> dict[str, Any]:
        low = self._number(scaling, "low_freq_factor")
        high = self._number(scaling, "high_freq_factor")
        if high <= low:
            raise UnsupportedModelError(
                f"{self.arch}: llama3 RoPE needs high_freq_factor > low_freq_factor, got "
                f"{high} and {low}"
            )
        return {
            "rope_type": "llama3",
            "factor": self._number(scaling, "factor"),
            "low_freq_factor": low,
            "high_freq_factor": high,
            "original_max_position_embeddings": self._original(scaling),
        }

    def _yarn(self, scaling: dict[str, Any]) -> dict[str, Any]:
        """The ramp's parameters with transformers' defaults, and the cos/sin scale resolved."""
        original = self._original(scaling)
        implied = self.get("max_position_embeddings", required=True) / original
        factor = self._number(scaling, "factor", implied)
        attention = scaling.get("attention_factor") or yarn_attention_factor(
            factor, scaling.get("mscale") or 0.0, scaling.get("mscale_all_dim") or 0.0
        )
        return {
            "rope_type": "yarn",
            "factor": factor,
            "original_max_position_embeddings": original,
            "beta_fast": float(scaling.get("beta_fast") or 32.0),
            "beta_slow": float(scaling.get("beta_slow") or 1.0),
            "attention_factor": float(attention),
            "truncate": bool(scaling.get("truncate", True)),
        }


def _proportional(reader: HFConfigReader, scaling: dict[str, Any]) -> dict[str, Any]:
    """Gemma 4's: a share of each head's feature pairs turns (rope_scaling.TABLES)."""
    out = {"rope_type": "proportional"}
    out["partial_rotary_factor"] = reader._number(scaling, "partial_rotary_factor", 1.0)
    if float(scaling.get("factor") or 1.0) != 1.0:
        out["factor"] = reader._number(scaling, "factor")
    return out


_SCALINGS = {
    "default": lambda reader, scaling: {},
    "mrope": lambda reader, scaling: {},  # Qwen2.5-VL's sections: rules.mrope reads them
    "llama3": HFConfigReader._llama3,
    "yarn": HFConfigReader._yarn,
    "linear": lambda reader, scaling: {"rope_type": "linear", "factor": float(scaling["factor"])},
    "longrope": HFConfigReader._longrope,
    "su": HFConfigReader._longrope,  # Phi-3-128k's original configs name LongRoPE so
    "proportional": _proportional,
}


def hf_architecture(config: dict[str, Any]) -> str:
    names = config.get("architectures") or []
    if not names:
        return str(config.get("model_type", ""))
    return str(names[0])
