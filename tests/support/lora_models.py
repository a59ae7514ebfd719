"""Random LoRA adapters for the tiny models, written by `peft` itself (the reference), and the
llama.cpp converter that turns one into a GGUF adapter."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.llamacpp_convert import llamacpp_tree


@dataclass(frozen=True)
class AdapterSpec:
    seed: int
    targets: tuple[str, ...] = ("q_proj", "v_proj", "gate_proj", "up_proj", "down_proj")
    rank: int = 8
    alpha: float = 16.0
    rslora: bool = False


ADAPTERS = {
    "a1": AdapterSpec(1),
    "a2": AdapterSpec(2, alpha=8.0, rslora=True),
}


def make_adapter(model_folder: Path, out: Path, spec: AdapterSpec) -> Path:
    """A PEFT LoRA folder for the model, every A and B random (PEFT starts B at zero)."""
    import peft
    import torch

    from tests.support.tiny_models import load_reference

    if (out / "adapter_config.json").exists():
        return out
    config = peft.LoraConfig(
        r=spec.rank,
        lora_alpha=spec.alpha,
        target_modules=list(spec.targets),
        use_rslora=spec.rslora,
    )
    model = peft.get_peft_model(load_reference(model_folder), config)
    generator = torch.Generator().manual_seed(spec.seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(0.1 * torch.randn(param.shape, generator=generator))
    model.save_pretrained(out)
    return out


def peft_model(model_folder: Path, adapter: Path):
    """transformers + peft running the adapter: the reference logits."""
    import peft

    from tests.support.tiny_models import load_reference

    return peft.PeftModel.from_pretrained(load_reference(model_folder), adapter).eval()


def convert_to_gguf(model_folder: Path, adapter: Path, out: Path) -> Path:
    """llama.cpp's convert_lora_to_gguf.py on the adapter (float32 tensors). Not kept between
    runs: the file names the base model's folder, a new temporary one each run."""
    if out.exists():
        return out
    tree = llamacpp_tree()
    script = [sys.executable, str(tree / "convert_lora_to_gguf.py"), "--outtype", "f32"]
    command = [*script, "--base", str(model_folder), "--outfile", str(out), str(adapter)]
    env = {**os.environ, "PYTHONPATH": str(tree / "gguf-py")}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    return out
