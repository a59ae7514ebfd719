"""M-RoPE and deepstack fields (Qwen-VL text models) from config.json or GGUF metadata.

config.json keeps `mrope_section` in `rope_parameters` (transformers 5) or `rope_scaling`
(released Qwen2.5-VL configs, with type "mrope"); Qwen3-VL adds `mrope_interleaved`. llama.cpp
writes `{arch}.rope.dimension_sections` (four counts, the last 0) and tells the interleaved
kind by its architecture (qwen3vl); `{arch}.n_deepstack_layers` counts Qwen3-VL's deepstack."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint, need_arch_meta
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.frontends.rules.gguf import GGUFRule
from mlcx.frontends.rules.hf import HFRule

# The targets whose runtimes pass rope_positions and run the Qwen vision encoder, tested
# against transformers (cpu: tests/vision/test_qwen_vl.py; webgpu and vulkan on lavapipe:
# test_qwen_vl_webgpu.py; webgpu in Chromium: test_qwen_vl_web.py). The others (cuda, metal,
# phones) are refused until tested.
MROPE_TARGETS = ("cpu", "webgpu", "vulkan")


def _sections(value: Any, where: str) -> tuple[int, ...]:
    sections = tuple(int(s) for s in value or ())
    if len(sections) == 4 and sections[3] == 0:  # llama.cpp's fourth ("extra") section
        sections = sections[:3]
    if len(sections) != 3:
        raise UnsupportedModelError(f"{where}: M-RoPE needs three sections, got {list(value)}")
    return sections


def hf_mrope(interleaved: bool) -> HFRule:
    """mrope_section from rope_parameters or rope_scaling; `interleaved`: the family's kind
    where the config does not say (mrope_interleaved)."""

    def rule(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
        params = {**(r.config.get("rope_scaling") or {}), **(r.config.get("rope_parameters") or {})}
        if "mrope_section" not in params:
            raise UnsupportedModelError(f"{r.arch}: config.json has no mrope_section")
        kind = bool(params.get("mrope_interleaved", interleaved))
        sections = _sections(params["mrope_section"], r.arch)
        return {"mrope_sections": sections, "mrope_interleaved": kind}

    return rule


def hf_deepstack(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
    """Qwen3-VL: one deepstack block per vision layer listed (read from the outer config)."""
    layers = (r.outer.get("vision_config") or {}).get("deepstack_visual_indexes") or ()
    return {"deepstack_layers": len(layers)}


def gguf_mrope(interleaved: bool) -> GGUFRule:
    def rule(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
        value = need_arch_meta(ckpt, "rope.dimension_sections")
        sections = _sections(value, str(ckpt.path))
        return {"mrope_sections": sections, "mrope_interleaved": interleaved}

    return rule


def gguf_deepstack(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    return {"deepstack_layers": int(ckpt.arch_meta("n_deepstack_layers", 0))}
