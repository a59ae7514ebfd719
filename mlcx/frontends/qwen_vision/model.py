"""The Qwen-VL image encoder as one function, `embed_image`: the patches of one image (and the
tables the runtime computes for them, qwen_vision.inputs) -> image rows [tokens, text hidden x
blocks]: the merger's rows, then each deepstack merger's (Qwen3-VL), side by side.

Mergers fold each 2x2 group of patches into one token: a norm per patch then an MLP over the
group (Qwen2.5-VL, Qwen3-VL's final merger), or the group's features normed together first
(Qwen3-VL's deepstack mergers). With window attention the groups run in window order and the
rows are put back in the image's order at the end (`restore`)."""

from __future__ import annotations

import inspect

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from mlcx.frontends.qwen_vision import inputs as names
from mlcx.frontends.qwen_vision.config import VisionConfig
from mlcx.frontends.qwen_vision.tower import (
    Block,
    PatchEmbed,
    norm,
    resampled_positions,
    rope_table,
    window_bias,
)
from mlcx.kernels.step_params import EMBED_IMAGE


class _NoParams(nn.Module):
    """The activation's slot in Hugging Face's nn.Sequential (mlp.1), which has no weights."""


class QwenMerger(nn.Module):
    """Qwen2.5-VL: ln_q (RMSNorm per patch), mlp.0, GELU, mlp.2."""

    def __init__(self, cfg: VisionConfig, dtype: str):
        group = cfg.hidden_size * cfg.merge_size**2
        self.ln_q = norm(cfg, cfg.hidden_size, dtype)
        self.mlp = nn.ModuleList(
            [
                nn.Linear(group, group, bias=True, dtype=dtype),
                _NoParams(),
                nn.Linear(group, cfg.text_hidden_size, bias=True, dtype=dtype),
            ]
        )
        self.group, self.patches = group, cfg.merge_size**2

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        grouped = op.reshape(self.ln_q(x), (x.shape[0] // self.patches, self.group))
        return self.mlp[2](op.gelu(self.mlp[0](grouped)))


class Qwen3Merger(nn.Module):
    """Qwen3-VL: norm (per patch, or over the group: `postshuffle`), linear_fc1, GELU,
    linear_fc2."""

    def __init__(self, cfg: VisionConfig, dtype: str, postshuffle: bool):
        self.group, self.patches = cfg.hidden_size * cfg.merge_size**2, cfg.merge_size**2
        self.postshuffle = postshuffle
        self.norm = norm(cfg, self.group if postshuffle else cfg.hidden_size, dtype)
        self.linear_fc1 = nn.Linear(self.group, self.group, bias=True, dtype=dtype)
        self.linear_fc2 = nn.Linear(self.group, cfg.text_hidden_size, bias=True, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        rows = x.shape[0] // self.patches
        if self.postshuffle:
            grouped = self.norm(op.reshape(x, (rows, self.group)))
        else:
            grouped = op.reshape(self.norm(x), (rows, self.group))
        return self.linear_fc2(op.gelu(self.linear_fc1(grouped)))


class VisionModel(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str):
        self.cfg = cfg
        self.patch_embed = PatchEmbed(cfg, dtype)
        if cfg.position_grid:
            self.pos_embed = nn.Embedding(cfg.position_grid**2, cfg.hidden_size, dtype=dtype)
        self.blocks = nn.ModuleList([Block(cfg, dtype) for _ in range(cfg.num_layers)])
        if cfg.norm == "rms":
            self.merger = QwenMerger(cfg, dtype)
        else:
            self.merger = Qwen3Merger(cfg, dtype, postshuffle=False)
        if cfg.deepstack_layers:
            mergers = [Qwen3Merger(cfg, dtype, True) for _ in cfg.deepstack_layers]
            self.deepstack_merger_list = nn.ModuleList(mergers)

    def forward(self, args: dict[str, nn.Tensor], dtype: str) -> nn.Tensor:
        cfg = self.cfg
        x = self.patch_embed(args[names.PATCHES])
        if cfg.position_grid:
            table = self.pos_embed.weight
            x = x + resampled_positions(table, args[names.POS_INDEX], args[names.POS_WEIGHT])
        bias = window_bias(args[names.WINDOWS], dtype) if cfg.window_size else None
        rope = rope_table(args[names.PATCH_POSITIONS], cfg)
        blocks = []
        for i, block in enumerate(self.blocks):
            x = block(x, rope, bias if cfg.windowed(i) else None)
            if i in cfg.deepstack_layers:
                merger = self.deepstack_merger_list[cfg.deepstack_layers.index(i)]
                blocks.append(merger(x))
        rows = self.merger(x)
        if blocks:
            rows = op.concat([rows, *blocks], dim=1)
        if cfg.window_size:
            rows = op.take(rows, args[names.RESTORE], axis=0)
        return rows


class ImageEncoder(nn.Module):
    def __init__(self, cfg: VisionConfig, dtype: str = "float32"):
        self.cfg = cfg
        self.dtype = dtype
        self.visual = VisionModel(cfg, dtype)

    @property
    def embed_image(self):
        """(inputs in input_names order) -> rows; nn's exporter reads the signature."""
        order = names.input_names(self.cfg)

        def method(*args: nn.Tensor) -> nn.Tensor:
            return self._embed(dict(zip(order, args, strict=True)))

        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter(n, kind) for n in order]
        method.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return method

    def _embed(self, named: dict[str, nn.Tensor]) -> nn.Tensor:
        patches = named[names.PATCHES]
        if self.dtype != "float32":
            named[names.PATCHES] = patches.astype(self.dtype)
        rows = self.visual(named, self.dtype)
        return rows if rows.dtype == "float32" else rows.astype("float32")

    def export_spec(self) -> dict:
        cfg = self.cfg
        shapes = {
            names.PATCHES: (("patches", cfg.patch_features), "float32"),
            names.PATCH_POSITIONS: (("patches", 2), "int32"),
            names.WINDOWS: (("patches",), "int32"),
            names.RESTORE: (("tokens",), "int32"),
            names.POS_INDEX: (("patches", names.TAPS), "int32"),
            names.POS_WEIGHT: (("patches", names.TAPS), "float32"),
        }
        args = {n: spec.Tensor(*shapes[n]) for n in names.input_names(cfg)}
        return {EMBED_IMAGE: {**args, "$": {"param_mode": "packed", "effect_mode": "none"}}}
