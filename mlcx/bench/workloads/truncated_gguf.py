"""A draft model for speculative-decoding benchmarks where no small trained sibling of the
model is at hand (the default model has none): some of a GGUF file's transformer blocks (the
first ones, optionally the last ones), renumbered, with its embeddings, final norm, head and
tokenizer, so the draft shares the tokenizer by construction. Untrained after the cut, such a
copy predicts the full model's tokens poorly; it shows the mechanism and its cost."""

from __future__ import annotations

import re
from pathlib import Path

import gguf

from mlcx.cache import cache_dir
from mlcx.frontends.gguf.checkpoint import open_gguf

_BLOCK = re.compile(r"^blk\.(\d+)\.")


def write_truncated_gguf(src: Path, out: Path, first: int, last: int = 0) -> Path:
    """Copy `src` to `out` keeping its first `first` and last `last` blocks, renumbered in
    order (metadata copied, block_count set)."""
    reader = open_gguf(src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    total = int(reader.fields[f"{arch}.block_count"].contents())
    if first < 1 or last < 0 or first + last >= total:
        raise ValueError(
            f"{src} has {total} blocks; keep fewer, and at least the first one "
            f"(asked for the first {first} and the last {last})"
        )
    kept_blocks = [*range(first), *range(total - last, total)]
    layers = len(kept_blocks)
    writer = gguf.GGUFWriter(str(out), arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by the writer itself
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = layers if field.name == f"{arch}.block_count" else field.contents()
        writer.add_key_value(field.name, value, kind, sub_type=sub)
    renamed = {old: new for new, old in enumerate(kept_blocks)}
    kept = [(_renamed(t.name, renamed), t) for t in reader.tensors]
    kept = [(name, t) for name, t in kept if name is not None]
    for name, tensor in kept:
        data = tensor.data
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, tensor in kept:
        writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
    writer.close()
    return out


def _renamed(name: str, renamed: dict[int, int]) -> str | None:
    """The tensor's name in the copy; None for a block left out."""
    match = _BLOCK.match(name)
    if match is None:
        return name
    new = renamed.get(int(match.group(1)))
    return None if new is None else f"blk.{new}." + name[match.end() :]


def ensure_truncated_gguf(src: Path, first: int, last: int = 0, say=print) -> Path:
    """The cached truncated copy of `src`, written on first use."""
    path = cache_dir() / "bench" / f"{src.stem}.first{first}-last{last}.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        say(f"writing the first {first} and last {last} blocks of {src} to {path}")
        partial = path.with_suffix(".partial")
        write_truncated_gguf(src, partial, first, last)
        partial.rename(path)
    return path
