"""CUDA graphs for the decode function: one captured graph per batch bucket.

TVM's `RewriteCUDAGraph` (run after `StaticPlanBlockMemory`) lifts the static allocations of a
function into `vm.builtin.cuda_graph.get_cached_alloc` and each run of kernel launches whose
arguments keep their addresses from call to call into `vm.builtin.cuda_graph.run_or_capture`:
the first call with a given set of symbolic shape values captures the launches into a graph,
later calls replay it (one cudaGraphLaunch instead of hundreds of kernel launches).

What makes mlcx's decode capturable:
- `num_input` 0: every parameter keeps its address — the KV pages and weights by nature, the
  step arrays because the runner writes them into persistent buffers, one set per bucket
  (mlcx.runtime.backends.decode_graph). Replay does not look at the addresses it is given, so
  the runner must never pass other tensors.
- `tir_var_upper_bound` on the token count: intermediate tensors then get storage of a fixed
  size (planned for the largest bucket), which a graph can keep.
- every symbolic value a bucket's call sees is fixed by the bucket (batch padded with rows
  over a scratch page, page_values padded to a fixed length), so replay finds its graph.
The logits, the function's output, are allocated per call and computed outside the graph by
the head kernel; prefill keeps plain launches (its shapes vary with every prompt).
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.decode_buckets import DECODE_BUCKETS
from mlcx.kernels.step_params import DECODE

CONFIG_KEY = "relax.backend.use_cuda_graph"
# The symbolic sizes of the decode step parameters (mlcx.kernels.step_params) that size
# intermediate tensors, bounded for memory planning; nnz_pages sizes only its input.
_BOUNDED = ("tokens", "batch")


def graph_max_batch(target_kind: str, enabled: bool = True) -> int | None:
    """The largest decode batch captured in a graph, or None where decode runs without
    graphs (targets other than cuda, or turned off)."""
    return DECODE_BUCKETS[-1] if enabled and target_kind == "cuda" else None


def mark_decode_capturable(max_batch: int) -> tvm.transform.Pass:
    """Annotates the decode function: all parameters static, token count bounded."""

    @tvm.transform.module_pass(opt_level=0, name="mlcx.MarkDecodeCapturable")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        gvar = next((g for g in mod.get_global_vars() if g.name_hint == DECODE), None)
        if gvar is None:
            return mod
        bounds = {name: max_batch for name in _BOUNDED}
        bounds["batch_plus_one"] = max_batch + 1
        func = mod[gvar].with_attrs({"num_input": 0, "tir_var_upper_bound": bounds})
        mod[gvar] = func
        return mod

    return _pass


def rewrite_cuda_graph() -> tvm.transform.Pass:
    """TVM's RewriteCUDAGraph with its switch on (it reads the switch from the PassContext)."""

    @tvm.transform.module_pass(opt_level=0, name="mlcx.RewriteCUDAGraph")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with tvm.transform.PassContext(config={CONFIG_KEY: True}):
            return relax.transform.RewriteCUDAGraph()(mod)

    return _pass


CAPTURE_BUILTINS = (
    "vm.builtin.cuda_graph.run_or_capture",
    "vm.builtin.cuda_graph.get_cached_alloc",
)


def capture_builtins(func: relax.Function) -> set[str]:
    """The CUDA-graph builtins a lowered Relax function calls."""
    found: set[str] = set()

    def visit(expr) -> None:
        if isinstance(expr, relax.ExternFunc) and str(expr.global_symbol) in CAPTURE_BUILTINS:
            found.add(str(expr.global_symbol))

    relax.analysis.post_order_visit(func, visit)
    return found
