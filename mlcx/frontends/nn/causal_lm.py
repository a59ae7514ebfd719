"""A decoder-only language model with the entry points every mlcx artifact exports.

Entry points (all take the KV pages of every layer that owns pages, DecoderConfig.kv_layers,
and update them in place):
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

import dataclasses
import inspect
from collections.abc import Callable

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.layer import DecoderLayer
from mlcx.frontends.nn.linear import QEmbedding, QLinear
from mlcx.frontends.nn.lora import LoraStep
from mlcx.frontends.nn.per_layer_inputs import PerLayerInputs
from mlcx.kernels.attention import PagedKVOps, StepTensors
from mlcx.kernels.hybrid.ops import StateOps, StateStep
from mlcx.kernels.image_rows import add_rows_te, replace_rows_te
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
    ROPE_POSITIONS,
    TOKENS,
    entry_inputs,
    param_shape,
    step_params,
)

LayerFactory = Callable[..., nn.Module]  # (cfg, formats, index, kv, states=StateOps)


class _StepMethod:
    """CausalLM.prefill or .decode: takes step_params(function) (rope_positions too for an
    M-RoPE model, the LoRA rows and scales with adapter slots), then kv_pages (then a hybrid
    model's `states`, then the LoRA weights).

    nn's exporter names and orders the exported function's parameters by the method's
    signature, so the signature is built from the one definition of the step parameters."""

    def __init__(self, function: str, states: bool = False):
        self.function = function
        self.states = states

    def __get__(self, model, owner=None):
        if model is None:
            return self
        lora = model.lora is not None
        # all but the weights (PARAMS), which the exporter adds
        names = entry_inputs(self.function, self.states, lora, mrope=model.mrope)[:-1]

        def method(*args):
            return model._step(self.function, dict(zip(names, args, strict=True)))

        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter(n, kind) for n in names]
        method.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        method.__name__ = method.__qualname__ = self.function
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
        self.mrope = bool(cfg.mrope_sections)  # the steps take 3-row rope positions
        self.lora = lora  # adapter slots: the step functions take LoRA inputs
        self.embed = QEmbedding(cfg.vocab_size, cfg.hidden_size, formats["embed"], dtype)
        # a hybrid model's state layers share one StateOps (their kernels, once per shape)
        self.state_ops = StateOps(kv.kind, kv.target) if cfg.state_layers else None
        extra = {"states": self.state_ops} if self.state_ops else {}
        self.layers = nn.ModuleList(
            [layer(cfg, formats, i, kv, **extra) for i in range(cfg.num_layers)]
        )
        self.ple = PerLayerInputs(cfg, formats, dtype) if cfg.per_layer_input_size else None
        self.norm = nn.RMSNorm(cfg.hidden_size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)
        self.lm_head = None
        if not cfg.tie_word_embeddings:
            self.lm_head = QLinear(
                cfg.hidden_size, cfg.vocab_size, formats["lm_head"], dtype, False
            )

    def _body(self, input_ids, caches, step: StepTensors, decode: bool, image=None, state=None):
        """The layers over the embeddings; `caches`: the KV pages or state tensors of each layer
        that owns them, by layer (`state`: the state layers' step arrays), returned updated. A
        layer sharing another's pages reads them as that layer left them this step."""
        x = self.embed(input_ids)
        if self.cfg.embed_scale != 1.0:
            x = x * self.cfg.embed_scale
        if image is not None:  # image rows replace the (scaled) image-token embeddings
            x = op.tensor_expr_op(replace_rows_te, "image_rows", [x, *image])
        per_layer = self._per_layer_inputs(input_ids, x)
        for i, layer in enumerate(self.layers):
            source = self.cfg.kv_source(i)
            x, caches[source] = layer(x, caches[source], step, decode, state, per_layer[i])
            if image is not None and i < self.cfg.deepstack_layers:
                x = self._deepstack(x, image, i)
        return x, caches

    def _per_layer_inputs(self, input_ids, x) -> list[nn.Tensor | None]:
        """Each layer's per-layer input [tokens, width] (None each where the model has none)."""
        cfg = self.cfg
        if self.ple is None:
            return [None] * cfg.num_layers
        inputs = self.ple(input_ids, x)
        parts = op.split(inputs, cfg.num_layers, axis=1) if cfg.num_layers > 1 else [inputs]
        return [op.squeeze(p, axis=1) for p in parts]

    def _deepstack(self, x: nn.Tensor, image, layer: int) -> nn.Tensor:
        """Block layer + 1 of the image rows added to the image tokens' hidden states."""
        offset = (layer + 1) * self.cfg.hidden_size
        return op.tensor_expr_op(
            lambda xt, rt, et: add_rows_te(xt, rt, et, offset), "image_rows_add", [x, *image]
        )

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
        if self.mrope:  # RoPE turns by the 3-row positions
            step = dataclasses.replace(step, positions=args[ROPE_POSITIONS])
        decode = function == DECODE
        image = (args[IMAGE_ROWS], args[IMAGE_EMBEDS]) if function == PREFILL_IMAGE else None
        caches = self._caches(args)
        x, caches = self._body(args[TOKENS], caches, step, decode, image, self._state_step(args))
        if not decode:
            x = op.tensor_expr_op(gather_rows_te, "gather_rows", [x, args[LOGIT_ROWS]])
        return (self._logits(x), *self._outputs(caches))

    # What a hybrid model (nn.hybrid_lm) changes: its state layers take state tensors.
    def _caches(self, args: dict[str, nn.Tensor]) -> dict[int, nn.Tensor]:
        return dict(zip(self.cfg.kv_layers, args[KV_PAGES], strict=True))

    def _state_step(self, args: dict[str, nn.Tensor]) -> StateStep | None:
        return None

    def _outputs(self, caches: dict) -> tuple:
        return (tuple(caches[i] for i in self.cfg.kv_layers),)

    def _lora(self, args: dict[str, nn.Tensor]) -> LoraStep | None:
        if self.lora is None:
            return None
        rows, scales, weights = args[LORA_ROWS], args[LORA_SCALES], list(args[LORA_WEIGHTS])
        return LoraStep.of(self.lora, self.kv.kind, rows, scales, weights)

    prefill = _StepMethod(PREFILL)
    decode = _StepMethod(DECODE)
    prefill_image = _StepMethod(PREFILL_IMAGE)

    def _kv_ops(self) -> list[PagedKVOps]:
        """The kernels of each KV layer's pages (their head geometry may differ)."""
        cfg = self.cfg
        return [
            self.kv.reshaped(cfg.layer_kv_heads(i), cfg.layer_head_dim(i)) for i in cfg.kv_layers
        ]

    def _kv_specs(self) -> list[spec.Tensor]:
        layouts = [ops.layout for ops in self._kv_ops()]
        return [spec.Tensor(lay.pages_shape(NUM_PAGES), lay.element) for lay in layouts]

    def copy_pages(self, kv_pages, pairs):
        return tuple(ops.copy(p, pairs) for ops, p in zip(self._kv_ops(), kv_pages, strict=True))

    def _param_spec(self, name: str) -> spec.Tensor:
        if name == IMAGE_EMBEDS:  # deepstack blocks after the rows that replace embeddings
            width = self.cfg.hidden_size * (1 + self.cfg.deepstack_layers)
            return spec.Tensor(("image_tokens", width), "float32")
        dtype = "float32" if name == LORA_SCALES else "int32"
        return spec.Tensor(param_shape(name), dtype)

    def _lora_spec(self) -> dict:
        if self.lora is None:
            return {}
        dtype = self.lora.weight_dtype
        return {LORA_WEIGHTS: [spec.Tensor(s, dtype) for _, s in self.lora.arrays()]}

    def export_spec(self) -> dict:
        kv = self._kv_specs()
        packed = {"param_mode": "packed", "effect_mode": "none"}
        functions = (PREFILL, DECODE, PREFILL_IMAGE) if self.images else (PREFILL, DECODE)
        steps = {
            name: {
                **{
                    p: self._param_spec(p)
                    for p in step_params(name, lora=self.lora is not None, mrope=self.mrope)
                },
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
