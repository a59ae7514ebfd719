"""A decoder-only language model with the entry points every mlcx artifact exports.

Entry points (all take the KV pages of every layer and update them in place):
- prefill(input_ids [t], positions [t], slots [t], q_indptr [b+1], page_indptr [b+1],
          page_values [nnz], last_page_len [b], logit_positions [n], kv_pages, params)
  -> logits [n, vocab] for the rows named by logit_positions (ragged runs of new tokens,
  with or without cached prefixes: chunked prefill, batched prefill, mixed steps);
- decode(same arrays, one new token per sequence, no logit_positions) -> logits [b, vocab];
- copy_pages(kv_pages, pairs [n, 2]) copies whole pages (copy-on-write).
"""

from __future__ import annotations

from collections.abc import Callable

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import DecoderLayer, Formats
from mlcx.frontends.nn.linear import QEmbedding, QLinear
from mlcx.kernels.attention import PagedKVOps, StepTensors
from mlcx.kernels.linear import gather_rows_te

LayerFactory = Callable[[DecoderConfig, Formats, int, PagedKVOps], nn.Module]


class CausalLM(nn.Module):
    def __init__(
        self,
        cfg: DecoderConfig,
        formats: Formats,
        kv: PagedKVOps,
        layer: LayerFactory = DecoderLayer,
    ):
        dtype = kv.layout.dtype
        self.cfg = cfg
        self.kv = kv
        self.embed = QEmbedding(cfg.vocab_size, cfg.hidden_size, formats["embed"], dtype)
        self.layers = nn.ModuleList([layer(cfg, formats, i, kv) for i in range(cfg.num_layers)])
        self.norm = nn.RMSNorm(cfg.hidden_size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)
        self.lm_head = None
        if not cfg.tie_word_embeddings:
            self.lm_head = QLinear(
                cfg.hidden_size, cfg.vocab_size, formats["lm_head"], dtype, False
            )

    def _body(self, input_ids, kv_pages, step: StepTensors, decode: bool):
        x = self.embed(input_ids)
        new_pages = []
        for layer, pages in zip(self.layers, kv_pages, strict=True):
            x, pages = layer(x, pages, step, decode)
            new_pages.append(pages)
        return x, tuple(new_pages)

    def _logits(self, x: nn.Tensor) -> nn.Tensor:
        x = self.norm(x)
        logits = self.embed.as_head(x) if self.lm_head is None else self.lm_head(x)
        return logits if logits.dtype == "float32" else logits.astype("float32")

    def prefill(
        self,
        input_ids,
        positions,
        slots,
        q_indptr,
        page_indptr,
        page_values,
        last_page_len,
        logit_positions,
        kv_pages,
    ):
        step = StepTensors(positions, slots, q_indptr, page_indptr, page_values, last_page_len)
        x, pages = self._body(input_ids, kv_pages, step, decode=False)
        rows = op.tensor_expr_op(gather_rows_te, "gather_rows", [x, logit_positions])
        return self._logits(rows), pages

    def decode(
        self,
        input_ids,
        positions,
        slots,
        q_indptr,
        page_indptr,
        page_values,
        last_page_len,
        kv_pages,
    ):
        step = StepTensors(positions, slots, q_indptr, page_indptr, page_values, last_page_len)
        x, pages = self._body(input_ids, kv_pages, step, decode=True)
        return self._logits(x), pages

    def copy_pages(self, kv_pages, pairs):
        return tuple(self.kv.copy(pages, pairs) for pages in kv_pages)

    def export_spec(self) -> dict:
        lay = self.kv.layout
        i32 = "int32"
        kv = [spec.Tensor(lay.pages_shape("num_pages"), lay.cache_dtype) for _ in self.layers]
        step = {
            "positions": spec.Tensor(["tokens"], i32),
            "slots": spec.Tensor(["tokens"], i32),
            "q_indptr": spec.Tensor(["batch_plus_one"], i32),
            "page_indptr": spec.Tensor(["batch_plus_one"], i32),
            "page_values": spec.Tensor(["nnz_pages"], i32),
            "last_page_len": spec.Tensor(["batch"], i32),
        }
        packed = {"param_mode": "packed", "effect_mode": "none"}
        return {
            "prefill": {
                "input_ids": spec.Tensor(["tokens"], i32),
                **step,
                "logit_positions": spec.Tensor(["num_logits"], i32),
                "kv_pages": kv,
                "$": packed,
            },
            "decode": {
                "input_ids": spec.Tensor(["tokens"], i32),
                **step,
                "kv_pages": kv,
                "$": packed,
            },
            "copy_pages": {
                "kv_pages": kv,
                "pairs": spec.Tensor(["num_copies", 2], i32),
                "$": {"param_mode": "none", "effect_mode": "none"},
            },
        }
