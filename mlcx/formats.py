"""The one format version of the files mlcx writes and reads back: an artifact directory
(`mlcx-config.json` carries it for every file beside it, the tokenizer's included) and a tuning
database's manifest.

Bump it when a reader could misread what an older mlcx wrote (a weight layout, a step
function's inputs, a field's meaning). Compiled kernels need no bump: the JIT cache is keyed by
a hash of the code that compiles them (mlcx/compile/jit.py).
2: CPU weights stored row-tiled; the chat template only in mlcx-tokenizer.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FORMAT_VERSION = 2


def check_format_version(data: Mapping[str, Any], what: str, remedy: str) -> None:
    """Raise ValueError naming `what` and `remedy` unless `data` was written in this format."""
    found = data.get("format_version")
    if found != FORMAT_VERSION:
        raise ValueError(
            f"{what} was written by another mlcx (format {found}, this mlcx reads "
            f"{FORMAT_VERSION}); {remedy}"
        )
