"""A decoder-only language model with the entry points every mlcx artifact exports.

Entry points (all take the KV pages of every layer and update them in place):
- prefill(input_ids, the page tables, logit_positions, kv_pages, params) -> logits [n, vocab]
  for the rows named by logit_positions (ragged runs of new tokens, with or without cached
  prefixes: chunked prefill, batched prefill, mixed steps);
- decode(input_ids, the page tables, kv_pages, params), one new token per sequence
  -> logits [b, vocab];
- copy_pages(kv_pages, pairs [n, 2]) copies whole pages (copy-on-write).
mlcx.kernels.step_params defines the step parameters (names, order, shapes) once. A model
built with a LoRA layout (adapter slots) takes each token's slot and scale among the step
parameters and the stacked adapter weights after kv_pages (mlcx.kernels.lora_layout).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.layer import DecoderLayer
from mlcx.frontends.nn.linear import QEmbedding, QLinear
from mlcx.frontends.nn.lora import LoraStep
from mlcx.kernels.attention import PagedKVOps, StepTensors
from mlcx.kernels.image_rows import replace_rows_te
from mlcx.kernels.kv_layout import NUM_PAGES
from mlcx.kernels.linear import gather_rows_te
from mlcx.kernels.lora_layout import LoraLayout
from mlcx.kernels.step_params import (
    COPY_PAGES,
    DECODE,
    IMAGE_EMBEDS,
    IMAGE_ROWS,
    KV_PAGES,
    LOGIT_ROWS,
    LORA_ROWS,
    LORA_SCALES,
    LORA_WEIGHTS,
    PAGE_TABLES,
    PREFILL,
    PREFILL_IMAGE,
    TOKENS,
    entry_inputs,
    param_shape,
    step_params,
)

LayerFactory = Callable[[DecoderConfig, Formats, int, PagedKVOps], nn.Module]


def _step_method(function: str, lora: bool = False):
    """CausalLM.prefill or .decode: takes step_params(function), then kv_pages (then the
    LoRA weights, with adapter slots).

    nn's exporter names and orders the exported function's parameters by the method's
    signature, so the signature is built from the one definition of the step parameters."""
    names = entry_inputs(function, lora=lora)[:-1]  # all but the weights (PARAMS)

    def method(self, *args):
        return self._step(function, dict(zip(names, args, strict=True)))

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(n, kind) for n in ("self", *names)]
    method.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    method.__name__ = method.__qualname__ = function
    return method


class CausalLM(nn.Module):
    def __init__(
        self,
        cfg: DecoderConfig,
        formats: Formats,
        kv: PagedKVOps,
        layer: LayerFactory = DecoderLayer,
        images: bool = False,
        lora: LoraLayout | None = None,
    ):
        dtype = kv.layout.dtype
        self.cfg = cfg
        self.kv = kv
        self.images = images  # export prefill_image too (models with an image encoder)
        self.lora = lora  # adapter slots: the step functions take LoRA inputs
        if lora is not None:  # the methods whose signatures name the LoRA inputs
            for function in (PREFILL, DECODE, PREFILL_IMAGE):
                setattr(self, function, types.MethodType(_step_method(function, True), self))
        self.embed = QEmbedding(cfg.vocab_size, cfg.hidden_size, formats["embed"], dtype)
        self.layers = nn.ModuleList([layer(cfg, formats, i, kv) for i in range(cfg.num_layers)])
        self.norm = nn.RMSNorm(cfg.hidden_size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)
        self.lm_head = None
        if not cfg.tie_word_embeddings:
            self.lm_head = QLinear(
                cfg.hidden_size, cfg.vocab_size, formats["lm_head"], dtype, False
            )

    def _body(self, input_ids, kv_pages, step: StepTensors, decode: bool, image=None):
        x = self.embed(input_ids)
        if self.cfg.embed_scale != 1.0:
            x = x * self.cfg.embed_scale
        if image is not None:  # image rows replace the (scaled) image-token embeddings
            x = op.tensor_expr_op(replace_rows_te, "image_rows", [x, *image])
        new_pages = []
        for layer, pages in zip(self.layers, kv_pages, strict=True):
            x, pages = layer(x, pages, step, decode)
            new_pages.append(pages)
        return x, tuple(new_pages)

    def _logits(self, x: nn.Tensor) -> nn.Tensor:
        x = self.norm(x)
        logits = self.embed.as_head(x) if self.lm_head is None else self.lm_head(x)
        logits = logits if logits.dtype == "float32" else logits.astype("float32")
        if self.cfg.logits_divisor != 1.0:
            logits = logits / self.cfg.logits_divisor
        cap = self.cfg.final_logit_softcap
        return op.tanh(logits / cap) * cap if cap else logits

    def _step(self, function: str, args: dict[str, nn.Tensor]):
        step = StepTensors(**{name: args[name] for name in PAGE_TABLES}, lora=self._lora(args))
        decode = function == DECODE
        image = (args[IMAGE_ROWS], args[IMAGE_EMBEDS]) if function == PREFILL_IMAGE else None
        x, pages = self._body(args[TOKENS], args[KV_PAGES], step, decode, image)
        if not decode:
            x = op.tensor_expr_op(gather_rows_te, "gather_rows", [x, args[LOGIT_ROWS]])
        return self._logits(x), pages

    def _lora(self, args: dict[str, nn.Tensor]) -> LoraStep | None:
        if self.lora is None:
            return None
        rows, scales, weights = args[LORA_ROWS], args[LORA_SCALES], list(args[LORA_WEIGHTS])
        return LoraStep.of(self.lora, self.kv.kind, rows, scales, weights)

    prefill = _step_method(PREFILL)
    decode = _step_method(DECODE)
    prefill_image = _step_method(PREFILL_IMAGE)

    def copy_pages(self, kv_pages, pairs):
        return tuple(self.kv.copy(pages, pairs) for pages in kv_pages)

    def _param_spec(self, name: str) -> spec.Tensor:
        if name == IMAGE_EMBEDS:
            return spec.Tensor(("image_tokens", self.cfg.hidden_size), "float32")
        dtype = "float32" if name == LORA_SCALES else "int32"
        return spec.Tensor(param_shape(name), dtype)

    def _lora_spec(self) -> dict:
        if self.lora is None:
            return {}
        dtype = self.lora.dtype
        return {LORA_WEIGHTS: [spec.Tensor(s, dtype) for _, s in self.lora.arrays()]}

    def export_spec(self) -> dict:
        lay = self.kv.layout
        kv = [spec.Tensor(lay.pages_shape(NUM_PAGES), lay.element) for _ in self.layers]
        packed = {"param_mode": "packed", "effect_mode": "none"}
        functions = (PREFILL, DECODE, PREFILL_IMAGE) if self.images else (PREFILL, DECODE)
        steps = {
            name: {
                **{p: self._param_spec(p) for p in step_params(name, lora=self.lora is not None)},
                KV_PAGES: kv,
                **self._lora_spec(),
                "$": packed,
            }
            for name in functions
        }
        copy = {
            KV_PAGES: kv,
            "pairs": spec.Tensor(["num_copies", 2], "int32"),
            "$": {"param_mode": "none", "effect_mode": "none"},
        }
        return {**steps, COPY_PAGES: copy}
