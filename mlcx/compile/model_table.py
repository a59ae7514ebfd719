"""docs/models.md's table of families x sources x targets, made from the registries (a test
keeps the page equal to it; `python -m mlcx.compile.model_table docs/models.md` rewrites it)."""

from __future__ import annotations

import sys
from pathlib import Path

from mlcx.frontends.encoders import ENCODERS
from mlcx.frontends.family import Family
from mlcx.frontends.registry import families
from mlcx.targets.registry import TARGETS

BEGIN = "<!-- families: made by mlcx/compile/model_table.py from the registries; do not edit -->"
END = "<!-- /families -->"


def _gguf_arch(family: str) -> str:
    side = families()[family].gguf
    return side.arch if side else family


def _row(family: Family) -> str:
    hf = ", ".join(f"`{n}`" for n in family.hf_names if n[:1].isupper())
    gguf = f"`{family.gguf.arch}`" if family.gguf else "—"
    text_archs = ENCODERS[family.encoder].text_archs if family.encoder else ()
    if text_archs:  # a text GGUF of these families with llama.cpp's mmproj file (--mmproj)
        names = [_gguf_arch(name) for name in text_archs]
        gguf = " / ".join(f"`{a}`" for a in names) + " + `mmproj` (`--mmproj`)"
    targets = ", ".join(family.targets) or "all"
    return f"| {family.name} | {family.summary} | {hf} | {gguf} | {targets} |"


def table() -> str:
    head = [
        "| Family | What it is | Hugging Face architectures | GGUF (llama.cpp arch) | Targets |",
        "|---|---|---|---|---|",
    ]
    rows = [_row(f) for f in families().values()]
    targets = ", ".join(TARGETS)
    note = f"Targets: all = {targets}, nothing left to a generic fallback schedule on GPU targets."
    return "\n".join([BEGIN, *head, *rows, "", note, END])


def rewrite(page: Path) -> bool:
    """Replace the table in `page` between the markers; True if it changed."""
    text = page.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + table() + text[end:]
    page.write_text(new)
    return new != text


if __name__ == "__main__":
    print("rewritten" if rewrite(Path(sys.argv[1])) else "already current")
