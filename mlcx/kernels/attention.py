"""The paged-KV kernels one model uses, built once and called from the `nn` graph.

The KV cache manager (mlcx.runtime.kv) decides pages; these kernels only read and write them:
- append: writes new keys/values at their slots, in the cache dtype (mlcx.kernels.gpu.kv_append
  on GPU, mlcx.kernels.cpu.kv_pages on CPU, whose pages hold keys transposed);
- attend: causal attention over each sequence's pages — mlcx's CPU kernel on llvm targets,
  mlcx's GPU kernel (mlcx.kernels.gpu.attention) on GPU targets, for prefill and decode; RoPE
  is applied before the append;
- copy: copies whole pages (copy-on-write of a shared page).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from functools import cached_property

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
    def _cpu_attend(self, window: int, softcap: float) -> tirx.PrimFunc:
        lay = self.layout
        heads = (lay.num_kv_heads, lay.num_q_heads, lay.head_dim)
        return attention_cpu.paged_attention_cpu(
            *heads, lay.cache_dtype, lay.page_size, lay.dtype, window, softcap
        )

    @functools.cache  # noqa: B019 (one PagedKVOps per model)
    def _gpu_attend(self, window: int, softcap: float) -> tirx.PrimFunc:
        lay = self.layout
        heads = (lay.num_q_heads, lay.num_kv_heads, lay.head_dim)
        geometry = (lay.page_size, lay.dtype, self.gpu, 1, window, softcap, lay.cache_dtype)
        return _private(paged_attention_gpu(*heads, *geometry))

    @functools.cache  # noqa: B019 (one PagedKVOps per model)
    def _gpu_split(
        self, splits: int, window: int, softcap: float
    ) -> tuple[tirx.PrimFunc, tirx.PrimFunc]:
        lay = self.layout
        heads = (lay.num_q_heads, lay.num_kv_heads, lay.head_dim)
        geometry = (lay.page_size, lay.dtype, self.gpu, splits, window, softcap, lay.cache_dtype)
        split = paged_attention_gpu(*heads, *geometry)
        merge = merge_attention_gpu(lay.num_q_heads, lay.head_dim, lay.dtype, splits)
        return _private(split), _private(merge)

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
    ) -> nn.Tensor:
        """q [tokens, h_q, d] -> attention output [tokens, h_q, d]; with `window` > 0 each
        query sees only its last `window` keys (sliding-window attention); with `softcap` > 0
        scores are capped by softcap * tanh(score / softcap)."""
        out = nn.Tensor.placeholder(q.shape, q.dtype)
        tables = [step.page_indptr, step.page_values, step.last_page_len]
        if self.kind == "cpu":
            args = [q, step.q_indptr, pages, *tables]
            return op.tensor_ir_op(self._cpu_attend(window, softcap), "attention", args, out)
        args = [q, step.q_indptr, pages, *tables]
        splits = self.gpu.decode_splits if decode else self.gpu.prefill_splits
        if splits > 1:
            return self._split_attend(q, args, out, splits, (window, softcap))
        return op.tensor_ir_op(self._gpu_attend(window, softcap), "attention", args, out)

    def _split_attend(
        self, q: nn.Tensor, args: list, out: nn.Tensor, s: int, options: tuple[int, float]
    ) -> nn.Tensor:
        """Chunks of every row's keys in parallel (split-K), then their merge."""
        split, merge = self._gpu_split(s, *options)
        partial = nn.Tensor.placeholder([s, *q.shape], "float32")
        stats = nn.Tensor.placeholder([s, q.shape[0], q.shape[1], 2], "float32")
        partial, stats = op.tensor_ir_op(split, "attention_split", args, [partial, stats])
        return op.tensor_ir_op(merge, "attention_merge", [partial, stats], out)
