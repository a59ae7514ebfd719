"""RoPE on the fused qkv projection plus the KV append, as one GPU kernel.

Replaces reshape -> split -> rope(q), rope(k) -> kv_append (five kernels a layer): a workgroup
per token, one thread per rotation pair (features i and i + d/2 of a head) and head group; the
cos/sin of a pair are evaluated once per thread (TVM's frequency formulas, as mlcx.kernels.rope
uses) and applied to every head it visits. q goes to its own output, k is rotated straight into
the pages and v is copied there, at the token's slot (-1: no write). Consecutive threads touch
consecutive features (coalesced).

With q/k norms (Qwen3: an RMSNorm over each q and k head before RoPE, weights as two extra [d]
inputs after slots) the threads of a head first sum their squares through shared memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.kv_layout import NUM_PAGES, kv_pages_shape
from mlcx.kernels.rope import RopeParams, rope_freq_func

THREADS = 128


@dataclass(frozen=True)
class _HeadNorm:
    q: tirx.Buffer  # [d] weights of the q heads
    k: tirx.Buffer  # [d] weights of the k heads
    eps: float
    sums: tirx.Buffer  # shared, one a^2 + b^2 per thread
    total: tirx.Buffer  # local accumulator

    def apply(self, a, b, h, h_q: int, i, group, half: int):
        """(a, b) * rsqrt(mean of the head's squares + eps) * the head's weights. Every thread
        of the workgroup must call it: it holds two barriers."""
        T.buffer_store(self.sums, a * a + b * b, [group * half + i])
        T.evaluate(T.tvm_storage_sync("shared"))
        T.buffer_store(self.total, tirx.const(0.0, "float32"), [0])
        with T.serial(0, half) as j:
            T.buffer_store(self.total, self.total[0] + self.sums[group * half + j], [0])
        T.evaluate(T.tvm_storage_sync("shared"))
        mean = self.total[0] / tirx.const(2 * half, "float32")
        scale = T.bind(tirx.const(1.0, "float32") / T.sqrt(mean + tirx.const(self.eps, "float32")))

        def weight(f):
            return T.Select(h < h_q, self.q[f], self.k[f]).astype("float32")

        return T.bind(a * scale * weight(i)), T.bind(b * scale * weight(half + i))


def _head_norm(weights: tuple | None, eps: float | None, threads: int) -> _HeadNorm | None:
    """The norm with its scratch buffers (declared inside the launch), or None without norms."""
    if weights is None or eps is None:
        return None
    sums = T.alloc_buffer((threads,), "float32", scope="shared")
    total = T.alloc_buffer((1,), "float32", scope="local")
    return _HeadNorm(*weights, eps, sums, total)


def _params(h_q: int, h_kv: int, d: int, page_size: int, dtype: str, norm: bool):
    tokens = tirx.Var("tokens", "int64")
    width = (h_q + 2 * h_kv) * d

    def param(name, shape, dt):
        return T.match_buffer(T.arg(name, T.handle()), shape, dt)

    qkv = param("qkv", (tokens, width), dtype)
    positions = param("positions", (tokens,), "int32")
    num_pages = tirx.Var(NUM_PAGES, "int64")
    pages = param("pages", kv_pages_shape(num_pages, h_kv, page_size, d), dtype)
    slots = param("slots", (tokens,), "int32")
    weights = (param("q_norm", (d,), dtype), param("k_norm", (d,), dtype)) if norm else None
    q_out = param("q", (tokens, h_q, d), dtype)
    return tokens, qkv, positions, pages, slots, weights, q_out


def _cos_sin(rope: RopeParams, position, i):
    cos, sin, lets = rope_freq_func(rope.scaling)(
        position.astype("float32"), i, rope.rotary_dim, rope.theta, "float32"
    )
    for var, value in lets.items():
        cos, sin = tirx.Let(var, value, cos), tirx.Let(var, value, sin)
    return T.bind(cos), T.bind(sin)


def rope_append_gpu(
    h_q: int,
    h_kv: int,
    d: int,
    page_size: int,
    dtype: str,
    rope: RopeParams,
    norm_eps: float | None = None,
) -> tirx.PrimFunc:
    """(qkv [t, (h_q + 2 h_kv) d], positions [t], pages (in place), slots [t]
    [, q_norm [d], k_norm [d] when norm_eps is given]) -> q [t, h_q, d].
    RoPE over the whole head (rotary_dim == d), the layout every mlcx model uses."""
    if rope.rotary_dim != d or d % 2:
        raise ValueError(f"the GPU rope+append kernel rotates whole heads, not {rope.rotary_dim}")
    half, heads = d // 2, h_q + 2 * h_kv
    groups = max(1, THREADS // half)
    with IRBuilder() as ib, T.prim_func():
        T.func_name("rope_append_gpu")
        T.func_attr(KERNEL_ATTRS)
        params = _params(h_q, h_kv, d, page_size, dtype, norm_eps is not None)
        tokens, qkv, positions, pages, slots, weights, q_out = params
        t = T.env_thread("blockIdx.x")
        tx = T.env_thread("threadIdx.x")
        with T.launch_thread(t, tokens), T.launch_thread(tx, groups * half):
            norm = _head_norm(weights, norm_eps, groups * half)
            i, group = tx % half, tx // half
            cos, sin = _cos_sin(rope, positions[t], i)
            slot = T.bind(slots[t])
            with T.serial(0, (heads + groups - 1) // groups) as step:
                h = step * groups + group
                base = T.bind(
                    T.min(h, heads - 1) * d
                )  # the last step's extra threads read in range
                a = T.bind(qkv[t, base + i].astype("float32"))
                b = T.bind(qkv[t, base + half + i].astype("float32"))
                if norm is not None:  # v heads are copied from qkv below, unnormalized
                    a, b = norm.apply(a, b, h, h_q, i, group, half)
                low = (a * cos - b * sin).astype(dtype)
                high = (b * cos + a * sin).astype(dtype)
                page, offset = slot // page_size, slot % page_size
                with T.If(h < h_q), T.Then():
                    T.buffer_store(q_out, low, [t, h, i])
                    T.buffer_store(q_out, high, [t, h, half + i])
                with T.If(tirx.all(h >= h_q, h < h_q + h_kv, slot >= 0)), T.Then():
                    T.buffer_store(pages, low, [page, 0, h - h_q, offset, i])
                    T.buffer_store(pages, high, [page, 0, h - h_q, offset, half + i])
                with T.If(tirx.all(h >= h_q + h_kv, h < heads, slot >= 0)), T.Then():
                    kv = h - h_q - h_kv
                    T.buffer_store(pages, qkv[t, base + i], [page, 1, kv, offset, i])
                    T.buffer_store(pages, qkv[t, base + half + i], [page, 1, kv, offset, half + i])
    return ib.get()
