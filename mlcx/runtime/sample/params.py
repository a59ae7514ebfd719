"""Per-request sampling parameters, validated once when the request enters the runtime."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from mlcx.artifact.sampling import DEFAULTABLE
from mlcx.errors import InvalidFieldError
from mlcx.runtime.structured.constraint import Constraint

MAX_TOP_LOGPROBS = 20
MAX_N = 16
MAX_TEMPERATURE = 100.0
MAX_ABS_LOGIT_BIAS = 100.0
MAX_ABS_PENALTY = 2.0
_SEED_LIMIT = 2**64  # PCG64 seeds are unsigned 64-bit integers


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_int(
    name: str, value: object, lo: int, hi: int | None = None, *, param: str | None = None
) -> int:
    """`name` is what the message calls the value; `param`, if it differs, the field it is in."""
    allowed = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
    if not _is_int(value) or value < lo or (hi is not None and value > hi):
        raise InvalidFieldError(
            f"{name} must be an integer {allowed}, got {value!r}", param or name
        )
    return value


def _check_float(
    name: str,
    value: object,
    lo: float,
    hi: float,
    *,
    lo_open: bool = False,
    param: str | None = None,
) -> float:
    if (
        _is_number(value)
        and math.isfinite(value)
        and (value > lo or (value == lo and not lo_open))
        and value <= hi
    ):
        return float(value)
    if math.isinf(hi):
        allowed = f"> {lo}" if lo_open else f">= {lo}"
    else:
        allowed = f"in {'(' if lo_open else '['}{lo}, {hi}]"
    raise InvalidFieldError(
        f"{name} must be a finite number {allowed}, got {value!r}", param or name
    )


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidFieldError(f"{name} must be a bool, got {value!r}", name)
    return value


def _normalize_stop(value: object) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, Iterable):
        raise InvalidFieldError(
            f"stop must be a string or a sequence of strings, got {value!r}", "stop"
        )
    stop = tuple(items)
    for s in stop:
        if not isinstance(s, str) or not s:
            raise InvalidFieldError(f"stop entries must be non-empty strings, got {s!r}", "stop")
    return stop


def _normalize_stop_token_ids(value: object) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidFieldError(
            f"stop_token_ids must be a sequence of integers, got {value!r}", "stop_token_ids"
        )
    ids = tuple(value)
    for t in ids:
        _check_int("stop_token_ids entry", t, 0, param="stop_token_ids")
    return ids


def _normalize_logit_bias(value: object) -> dict[int, float] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidFieldError(
            f"logit_bias must be a mapping token id -> bias or None, got {value!r}", "logit_bias"
        )
    bias: dict[int, float] = {}
    for token, b in value.items():
        _check_int("logit_bias token id", token, 0, param="logit_bias")
        limit = MAX_ABS_LOGIT_BIAS
        bias[token] = _check_float(f"logit_bias[{token}]", b, -limit, limit, param="logit_bias")
    return bias


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens for one request.

    Normalization done at construction: numbers become floats, `top_k == -1` becomes 0
    (both mean "disabled"), `stop` given as one string becomes a 1-tuple, and `logit_bias`
    is copied so later changes to the caller's dict cannot leak in.
    """

    max_tokens: int | None = 256  # None: generate up to the context window
    temperature: float = 1.0  # 0: greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 or -1: disabled
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    # Excluded from hashing because dicts are unhashable; still part of equality.
    logit_bias: dict[int, float] | None = field(default=None, hash=False)
    seed: int | None = None  # choice i of an n > 1 request uses seed + i
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    logprobs: bool = False
    top_logprobs: int = 0
    n: int = 1
    constraint: Constraint | None = None  # the output must match it (structured/constraint.py)

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if self.max_tokens is not None:
            _check_int("max_tokens", self.max_tokens, 1)
        put("temperature", _check_float("temperature", self.temperature, 0.0, MAX_TEMPERATURE))
        put("top_p", _check_float("top_p", self.top_p, 0.0, 1.0, lo_open=True))
        if not _is_int(self.top_k) or self.top_k < -1:
            raise InvalidFieldError(
                f"top_k must be an integer >= 1, or 0/-1 to disable, got {self.top_k!r}", "top_k"
            )
        put("top_k", max(self.top_k, 0))
        put("min_p", _check_float("min_p", self.min_p, 0.0, 1.0))
        put(
            "repetition_penalty",
            _check_float(
                "repetition_penalty", self.repetition_penalty, 0.0, math.inf, lo_open=True
            ),
        )
        for name in ("presence_penalty", "frequency_penalty"):
            value = _check_float(name, getattr(self, name), -MAX_ABS_PENALTY, MAX_ABS_PENALTY)
            put(name, value)
        put("logit_bias", _normalize_logit_bias(self.logit_bias))
        _check_int("n", self.n, 1, MAX_N)
        if self.seed is not None:
            _check_int("seed", self.seed, 0, _SEED_LIMIT - self.n)
        put("stop", _normalize_stop(self.stop))
        put("stop_token_ids", _normalize_stop_token_ids(self.stop_token_ids))
        for name in ("ignore_eos", "logprobs"):
            _check_bool(name, getattr(self, name))
        _check_int("top_logprobs", self.top_logprobs, 0, MAX_TOP_LOGPROBS)
        if self.constraint is not None and not isinstance(self.constraint, Constraint):
            raise InvalidFieldError(
                f"constraint must be a Constraint, got {self.constraint!r}", "constraint"
            )
        if self.top_logprobs > 0 and not self.logprobs:
            raise InvalidFieldError(
                f"top_logprobs={self.top_logprobs} requires logprobs=True; "
                "set logprobs=True or top_logprobs=0",
                "top_logprobs",
            )

    @classmethod
    def with_defaults(cls, defaults: Mapping[str, Any], **given: Any) -> SamplingParams:
        """What every front door runs: `given` over the model's `defaults` (an artifact's
        `config.sampling`) over this class's own. For the fields a model may default
        (`DEFAULTABLE`) None means "not given"; the other fields take what is given, None
        included (max_tokens=None: up to the context window)."""
        values = {k: v for k, v in defaults.items() if k in DEFAULTABLE}
        values.update({k: v for k, v in given.items() if v is not None or k not in DEFAULTABLE})
        return cls(**values)

    @classmethod
    def greedy(cls, **overrides: Any) -> SamplingParams:
        """Deterministic argmax decoding; other fields may still be overridden."""
        return cls(**{"temperature": 0.0, **overrides})

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0.0

    def with_updates(self, **changes: Any) -> SamplingParams:
        """A validated copy with some fields changed."""
        return replace(self, **changes)

    def validate_vocab(self, vocab_size: int) -> None:
        """Check token ids against the model's vocabulary (unknown when params are built)."""
        if not _is_int(vocab_size) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
        for param, tokens, what in (
            ("logit_bias", self.logit_bias or {}, "logit_bias token id"),
            ("stop_token_ids", self.stop_token_ids, "stop_token_ids entry"),
        ):
            for token in tokens:
                if token >= vocab_size:
                    raise InvalidFieldError(
                        f"{what} must be in [0, {vocab_size - 1}], got {token}", param
                    )
