"""HF transformers' greedy tokens on a GGUF file, the reference the real-file tests compare with.

transformers dequantizes a GGUF in Python before it generates (about a minute for the 135M
default model on this CPU), so the reference's answer is kept on disk, as the tests keep their
compiled artifacts (tests/support/disk_cache.py): keyed by everything that decides it (the
file's bytes, the prompt, the token count and the versions of transformers, torch and gguf),
so that a change to any of them asks transformers again. MLCX_TEST_REFERENCES=off keeps
nothing; =DIR keeps it in DIR.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from tests.support.disk_cache import cache_root, kept_entry

ROOT = cache_root("MLCX_TEST_REFERENCES", "test-references")
READ_BYTES = 1 << 24


def hf_gguf_greedy(path: Path, prompt: str, tokens: int) -> tuple[list[int], list[int]]:
    """(prompt ids, `tokens` greedy tokens) of transformers (float32) on the GGUF at `path`."""

    def write(dest: Path) -> None:
        ids, out = _generate(path, prompt, tokens)
        dest.write_text(json.dumps({"prompt_ids": ids, "tokens": out}))

    key = _file_digest(path)  # the file's bytes first, then the rest of the key
    entry = kept_reference(["greedy", prompt, str(tokens)], ".json", write, key)
    found = json.loads(entry.read_text())
    return found["prompt_ids"], found["tokens"]


def kept_reference(parts: list[str], suffix: str, write: Callable[[Path], None], digest=None):
    """The file `write(path)` makes, kept under the key of `parts` and the versions of
    transformers, torch and gguf, fed to `digest` (a new sha256 when None); a new temporary
    file each call with ROOT "off"."""
    digest = digest or hashlib.sha256()
    for part in (*parts, *_versions()):
        digest.update(part.encode() + b"\0")
    return kept_entry(ROOT, digest.hexdigest()[:32], suffix, write)


def _file_digest(path: Path):
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(READ_BYTES):
            digest.update(block)
    return digest


def _versions() -> tuple[str, ...]:
    """The installed versions (from their metadata: no import of torch just for a key)."""
    return tuple(version(name) for name in ("transformers", "torch", "gguf"))


def _generate(path: Path, prompt: str, tokens: int) -> tuple[list[int], list[int]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    ids = tokenizer(prompt)["input_ids"]
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=tokens, do_sample=False)
    return list(ids), out[0, len(ids) :].tolist()
