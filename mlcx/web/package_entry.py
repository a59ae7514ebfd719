"""The library's package entry as `mlcx web` serves it: web/src/ at /mlcx-web/, so any page on
the origin can `import { CreateMLCEngine } from "/mlcx-web/index.js"` without an import map.

The sources import their npm libraries by bare name (as an npm package must); served here,
those names point at the vendored copies under /vendor/ instead, the same table the demo
page's import map holds (web/index.html).
"""

from __future__ import annotations

import re

MOUNT = "/mlcx-web/"
BARE_IMPORTS = {
    "@huggingface/tokenizers": "/vendor/@huggingface/tokenizers/dist/tokenizers.mjs",
    "@huggingface/jinja": "/vendor/@huggingface/jinja/dist/index.js",
    "@mlc-ai/web-xgrammar": "/vendor/@mlc-ai/web-xgrammar/lib/index.js",
}
# `from "x"`, `import "x"` and `import("x")`
_FROM = re.compile(r"""(\bfrom\s*|\bimport\s*\(?\s*)(["'])([^"']+)\2""")


def resolve_bare_imports(source: str) -> str:
    """`source` with each import of an npm name pointing at the vendored file."""

    def swap(match: re.Match) -> str:
        target = BARE_IMPORTS.get(match.group(3), match.group(3))
        return f"{match.group(1)}{match.group(2)}{target}{match.group(2)}"

    return _FROM.sub(swap, source)
