"""KV pages for tests that hold mlcx's logits to ~1e-4 of float32 transformers.

CPU artifacts keep an f16 cache by default, which moves logits by up to ~1e-3
(tests/models/test_kv_dtype.py holds it to that); model-math tests keep f32 pages on CPU. GPU
targets keep the math's dtype already.
"""

from __future__ import annotations


def reference_pages(target: str = "cpu") -> dict[str, str]:
    """CompileRequest fields: f32 pages on cpu, the default elsewhere."""
    return {"kv_dtype": "float32"} if target == "cpu" else {}
