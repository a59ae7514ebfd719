"""Reading a LoRA adapter of any kind mlcx knows, by what the path is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mlcx.errors import ModelSourceError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.family import Family
from mlcx.frontends.lora.adapter import LoraAdapter
from mlcx.frontends.lora.gguf_adapter import is_gguf_adapter, read_gguf_adapter
from mlcx.frontends.lora.peft import is_peft, read_peft

Reader = Callable[[Path, Family, DecoderConfig], LoraAdapter]
# an adapter's kind -> (does it read this path, reader)
READERS: dict[str, tuple[Callable[[Path], bool], Reader]] = {
    "PEFT": (is_peft, read_peft),
    "GGUF": (is_gguf_adapter, read_gguf_adapter),
}


def read_adapter(path: Path | str, family: Family, cfg: DecoderConfig) -> LoraAdapter:
    """The adapter at `path` (a PEFT folder or a GGUF adapter file), checked against the model
    it is for: ModelSourceError naming what does not fit."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelSourceError(f"LoRA adapter {path} does not exist")
    for kind, (accepts, reader) in READERS.items():
        if accepts(path):
            adapter = reader(path, family, cfg)
            if not adapter.pairs:
                raise ModelSourceError(f"the {kind} adapter {path} changes no layer of the model")
            return adapter
    raise ModelSourceError(
        f"{path} is not a LoRA adapter mlcx reads: give a PEFT folder (adapter_config.json + "
        "adapter_model.safetensors) or a GGUF adapter (llama.cpp's convert_lora_to_gguf.py)"
    )
