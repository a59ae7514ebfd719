"""The generative families mlcx compiles: every `mlcx/frontends/<folder>/family.py` defining
FAMILY. The CLI's choices, its help and docs/models.md's table come from here."""

from __future__ import annotations

import difflib
import functools
import importlib
from pathlib import Path

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.family import Family

_HERE = Path(__file__).resolve().parent


@functools.cache
def families() -> dict[str, Family]:
    """Every declared family by name, in folder order."""
    found: dict[str, Family] = {}
    for folder in sorted(p.parent for p in _HERE.glob("*/family.py")):
        family = importlib.import_module(f"mlcx.frontends.{folder.name}.family").FAMILY
        if family.name in found:
            raise ValueError(f"two families are named {family.name!r}")
        found[family.name] = family
    return found


def _supported() -> str:
    return ", ".join(f.hf_names[0] for f in families().values())


def gguf_architectures() -> list[str]:
    """llama.cpp architecture names mlcx reads, once each."""
    return list(dict.fromkeys(f.gguf.arch for f in families().values() if f.gguf))


def describe_supported() -> str:
    """The architectures for help texts: Hugging Face's names, then llama.cpp's."""
    return f"Hugging Face: {_supported()}; GGUF: {', '.join(gguf_architectures())}"


def _closest(name: str, choices: dict[str, str]) -> str:
    """`, the closest mlcx knows is X (family)` where a known name resembles `name`."""
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.5)
    if not match:
        return ""
    return f"; the closest mlcx knows is {match[0]!r} (family {choices[match[0]]})"


_ASK = (
    ". To ask for it, file an issue with the model's config.json (or the GGUF's "
    "general.architecture) and a link to its reference implementation"
)


def for_hf(name: str) -> Family:
    for family in families().values():
        if name in family.hf_names:
            return family
    known = {n: f.name for f in families().values() for n in f.hf_names}
    raise UnsupportedModelError(
        f"architecture {name or '(none)'!r} is not supported{_closest(name, known)}; mlcx "
        f"compiles: {_supported()}{_ASK}"
    )


def for_gguf(name: str, has_experts: bool = False) -> Family:
    """The family of a GGUF file of llama.cpp architecture `name`; `has_experts`: the file's
    `{name}.expert_count` is positive (Mixtral is written as `llama`)."""
    named = [f for f in families().values() if f.gguf and f.gguf.arch == name]
    for family in named:
        if family.gguf and family.gguf.experts in (has_experts, None):
            return family
    if named:
        kind = "mixture-of-experts" if has_experts else "dense"
        raise UnsupportedModelError(
            f"GGUF architecture {name!r} as a {kind} model is not supported; mlcx reads "
            f"{name!r} files as: {', '.join(f.name for f in named)}"
        )
    gguf = gguf_architectures()
    closest = _closest(name, {a: a for a in gguf})
    raise UnsupportedModelError(
        f"GGUF architecture {name or '(none)'!r} is not supported{closest}; mlcx reads GGUF "
        f"files of: {', '.join(gguf)} (other architectures: compile their Hugging Face "
        f"folder){_ASK}"
    )
