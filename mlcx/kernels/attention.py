"""The paged-KV kernels one model uses, built once and called from the `nn` graph.

The KV cache manager (mlcx.runtime.kv) decides pages; these kernels only read and write them:
- append: writes new keys/values at their slots, in the cache dtype (mlcx.kernels.gpu.kv_append
  on GPU, mlcx.kernels.cpu.kv_pages on CPU, whose pages hold keys transposed);
- attend: causal attention over each sequence's pages — mlcx's CPU kernel on llvm targets,
  mlcx's GPU kernel (mlcx.kernels.gpu.attention) on GPU targets, for prefill and decode; RoPE
  is applied before the append; options: a sliding window, a score softcap, attention sinks;
- copy: copies whole pages (copy-on-write of a shared page).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, NamedTuple

from tvm import tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op
from tvm.target import Target

from mlcx.kernels.cpu import attention as attention_cpu
from mlcx.kernels.cpu.kv_pages import KERNEL_ATTR, kv_append_cpu
from mlcx.kernels.gpu.attention import merge_attention_gpu, paged_attention_gpu
from mlcx.kernels.gpu.config import GpuConfig, gpu_config
from mlcx.kernels.gpu.kv_append import kv_append_gpu
from mlcx.kernels.kv_layout import KVLayout

__all__ = ["KVLayout", "PagedKVOps", "StepTensors"]


@dataclass
class StepTensors:
    """The page-table arrays of one step, as graph tensors; built by name from the step
    parameters (step_params.PAGE_TABLES)."""

    positions: nn.Tensor
    slots: nn.Tensor
    q_indptr: nn.Tensor
    page_indptr: nn.Tensor
    page_values: nn.Tensor
    last_page_len: nn.Tensor
    # the step's LoRA inputs (mlcx.frontends.nn.lora.LoraStep) in a model with adapter slots
    lora: Any = None


class _Options(NamedTuple):
    """The attention variant of a layer: its sliding window (0: none), score softcap (0:
    none) and whether it has attention sinks."""

    window: int
    softcap: float
    sinks: bool


def _private(func: tirx.PrimFunc) -> tirx.PrimFunc:
    # One PrimFunc is shared by every layer; the IRModule names it once.
    return func.without_attr("global_symbol")


class PagedKVOps:
    """Builds the kernels for one KV layout, for the kernel kind it names ("cpu" or "gpu")."""

    def __init__(
        self, layout: KVLayout, target: Target | None = None, gpu: GpuConfig | None = None
    ):
        if layout.kernel_kind == "gpu" and target is None:
            raise ValueError("GPU attention kernels need the TVM target")
        self.layout = layout
        self.kind = layout.kernel_kind  # KVLayout validated it
        self.target = target
        self.gpu = gpu or (gpu_config(target) if target is not None else GpuConfig())

    @functools.cache  # noqa: B019 (one PagedKVOps per model)
    def reshaped(self, num_kv_heads: int, head_dim: int) -> PagedKVOps:
        """The kernels for pages of another head geometry (a layer with heads of its own
        width), on the same target; this one where the geometry is its own."""
        lay = self.layout
        if (num_kv_heads, head_dim) == (lay.num_kv_heads, lay.head_dim):
            return self
        layout = replace(lay, num_kv_heads=num_kv_heads, head_dim=head_dim)
        return PagedKVOps(layout, self.target, self.gpu)

    @cached_property
    def _append(self) -> tirx.PrimFunc:
        lay = self.layout
        if self.kind == "cpu":  # CPU pages hold keys transposed (mlcx.kernels.cpu.kv_pages)
            func = kv_append_cpu(
                lay.num_kv_heads, lay.head_dim, lay.cache_dtype, lay.page_size, lay.dtype
            )
        else:
            func = kv_append_gpu(
                lay.num_kv_heads, lay.head_dim, lay.page_size, lay.cache_dtype, lay.dtype
            ).with_attr(KERNEL_ATTR, "kv_append_gpu")
        return _private(func)

    @cached_property
    def _copy(self) -> tirx.PrimFunc:
        lay = self.layout
        return _private(
            attention_cpu.copy_pages(
                lay.num_kv_heads, lay.head_dim, lay.cache_dtype, lay.page_size, self.kind == "gpu"
            )
        )

    @functools.cache  # noqa: B019 (one PagedKVOps per model)
    def _cpu_attend(self, options: _Options) -> tirx.PrimFunc:
        lay = self.layout
        heads = (lay.num_kv_heads, lay.num_q_heads, lay.head_dim)
        return attention_cpu.paged_attention_cpu(
            *heads, lay.cache_dtype, lay.page_size, lay.dtype, *options
        )

    @functools.cache  # noqa: B019 (one PagedKVOps per model)
    def _gpu_attend(self, splits: int, options: _Options) -> tirx.PrimFunc:
        lay = self.layout
        heads = (lay.num_q_heads, lay.num_kv_heads, lay.head_dim)
        window, softcap, sinks = options
        geometry = (lay.page_size, lay.dtype, self.gpu, splits, window, softcap, lay.cache_dtype)
        return _private(paged_attention_gpu(*heads, *geometry, sinks))

    @functools.cache  # noqa: B019 (one PagedKVOps per model)
    def _gpu_merge(self, splits: int) -> tirx.PrimFunc:
        lay = self.layout
        return _private(merge_attention_gpu(lay.num_q_heads, lay.head_dim, lay.dtype, splits))

    def append(self, pages: nn.Tensor, k: nn.Tensor, v: nn.Tensor, slots: nn.Tensor) -> nn.Tensor:
        out = nn.Tensor.placeholder(pages.shape, pages.dtype)
        return op.tensor_ir_inplace_op(self._append, "kv_append", [pages, k, v, slots], [0], out)

    def copy(self, pages: nn.Tensor, pairs: nn.Tensor) -> nn.Tensor:
        out = nn.Tensor.placeholder(pages.shape, pages.dtype)
        return op.tensor_ir_inplace_op(self._copy, "copy_pages", [pages, pairs], [0], out)

    def attend(
        self,
        q: nn.Tensor,
        pages: nn.Tensor,
        step: StepTensors,
        decode: bool,
        window: int = 0,
        softcap: float = 0.0,
        sinks: nn.Tensor | None = None,
    ) -> nn.Tensor:
        """q [tokens, h_q, d] -> attention output [tokens, h_q, d]; with `window` > 0 each
        query sees only its last `window` keys (sliding-window attention); with `softcap` > 0
        scores are capped by softcap * tanh(score / softcap); `sinks` [h_q] (q's dtype): each
        head's sink logit joins its softmax denominator and weighs no value (gpt-oss)."""
        if sinks is not None:
            self._check_sinks(q, sinks)
        options = _Options(window, softcap, sinks is not None)
        out = nn.Tensor.placeholder(q.shape, q.dtype)
        tables = [step.page_indptr, step.page_values, step.last_page_len]
        args = [q, step.q_indptr, pages, *tables] + ([sinks] if sinks is not None else [])
        if self.kind == "cpu":
            return op.tensor_ir_op(self._cpu_attend(options), "attention", args, out)
        splits = self.gpu.decode_splits if decode else self.gpu.prefill_splits
        if splits > 1:
            return self._split_attend(q, args, out, splits, options)
        return op.tensor_ir_op(self._gpu_attend(1, options), "attention", args, out)

    def _check_sinks(self, q: nn.Tensor, sinks: nn.Tensor) -> None:
        heads = self.layout.num_q_heads
        if [int(n) for n in sinks.shape] != [heads] or sinks.dtype != q.dtype:
            raise ValueError(
                f"attention sinks must be [{heads}] {q.dtype} (one logit per query head, in "
                f"the activations' dtype), got {list(sinks.shape)} {sinks.dtype}"
            )

    def _split_attend(
        self, q: nn.Tensor, args: list, out: nn.Tensor, s: int, options: _Options
    ) -> nn.Tensor:
        """Chunks of every row's keys in parallel (split-K), then their merge."""
        partial = nn.Tensor.placeholder([s, *q.shape], "float32")
        stats = nn.Tensor.placeholder([s, q.shape[0], q.shape[1], 2], "float32")
        split = self._gpu_attend(s, options)
        partial, stats = op.tensor_ir_op(split, "attention_split", args, [partial, stats])
        return op.tensor_ir_op(self._gpu_merge(s), "attention_merge", [partial, stats], out)
