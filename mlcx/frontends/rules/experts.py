"""The mixture-of-experts fields of a DecoderConfig, from config.json or GGUF metadata."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint, need_arch_meta
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.frontends.rules.gguf import GGUFRule
from mlcx.frontends.rules.hf import HFRule

_SHARED = ("shared_expert_intermediate_size", "n_shared_experts", "num_shared_experts")


def no_shared_experts(r: HFConfigReader) -> None:
    """Shared experts (Qwen2-MoE, DeepSeek) are not part of the shared decoder's MoE."""
    for key in _SHARED:
        if r.config.get(key):
            raise UnsupportedModelError(f"{r.arch}: shared experts ({key}) are not supported")


def hf_experts(width_key: str, renormalize: bool | None = None) -> HFRule:
    """The experts config.json describes; `width_key` names each expert's MLP width,
    `renormalize` None: the config's `norm_topk_prob` decides."""

    def rule(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
        norm = renormalize if renormalize is not None else r.get("norm_topk_prob", default=False)
        return {
            # transformers 5 writes num_local_experts for every family; released configs differ
            "num_experts": int(r.get("num_experts", "num_local_experts", required=True)),
            "experts_per_token": int(r.get("num_experts_per_tok", required=True)),
            "expert_intermediate_size": int(r.get(width_key, required=True)),
            "norm_topk_prob": bool(norm),
        }

    return rule


def gguf_experts(width_key: str, renormalize: bool, gate: str = "ffn_gate_exps") -> GGUFRule:
    """llama.cpp's `{arch}.expert_*` metadata; `renormalize` is what llama.cpp does for the
    architecture unless the file says (`expert_weights_norm`); `gate`: the stacked tensor the
    family reads its experts' gates from (Gemma 4's are fused with the ups: ffn_gate_up_exps)."""

    def rule(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
        count = int(ckpt.arch_meta("expert_count", 0))
        if count < 1:
            raise UnsupportedModelError(
                f"{ckpt.path}: GGUF architecture {ckpt.architecture!r} without "
                f"'{ckpt.architecture}.expert_count' is not a mixture of experts mlcx reads"
            )
        if f"blk.0.{gate}.weight" not in ckpt.names():
            raise UnsupportedModelError(
                f"{ckpt.path}: {ckpt.architecture!r} file without stacked expert tensors "
                f"(blk.N.{gate}): older llama.cpp conversions stored one tensor per "
                "expert; re-convert the model with a current convert_hf_to_gguf.py"
            )
        return {
            "num_experts": count,
            "experts_per_token": int(need_arch_meta(ckpt, "expert_used_count")),
            "expert_intermediate_size": int(need_arch_meta(ckpt, width_key)),
            "norm_topk_prob": bool(ckpt.arch_meta("expert_weights_norm", renormalize)),
        }

    return rule
