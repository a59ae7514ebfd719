"""RoPE on the fused qkv projection plus the KV append, as one GPU kernel.

Replaces reshape -> split -> rope(q), rope(k) -> kv_append (five kernels a layer): a workgroup
per token, one thread per rotation pair (features i and i + d/2 of a head) and head group; the
cos/sin of a pair are evaluated once per thread (TVM's frequency formulas, as mlcx.kernels.rope
uses) and applied to every head it visits. q goes to its own output, k is rotated straight into
the pages and v is copied there, at the token's slot (-1: no write). Consecutive threads touch
consecutive features (coalesced).
"""

from __future__ import annotations

from tvm import tirx
from tvm.relax.frontend.nn.llm.position_embedding import switch_rope_freq_func
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.kv_layout import NUM_PAGES, kv_pages_shape
from mlcx.kernels.rope import RopeParams

THREADS = 128


def _params(h_q: int, h_kv: int, d: int, page_size: int, dtype: str):
    tokens = tirx.Var("tokens", "int64")
    width = (h_q + 2 * h_kv) * d

    def param(name, shape, dt):
        return T.match_buffer(T.arg(name, T.handle()), shape, dt)

    qkv = param("qkv", (tokens, width), dtype)
    positions = param("positions", (tokens,), "int32")
    num_pages = tirx.Var(NUM_PAGES, "int64")
    pages = param("pages", kv_pages_shape(num_pages, h_kv, page_size, d), dtype)
    slots = param("slots", (tokens,), "int32")
    q_out = param("q", (tokens, h_q, d), dtype)
    return tokens, qkv, positions, pages, slots, q_out


def _cos_sin(rope: RopeParams, position, i):
    cos, sin, lets = switch_rope_freq_func(rope.scaling)(
        position.astype("float32"), i, rope.rotary_dim, rope.theta, "float32"
    )
    for var, value in lets.items():
        cos, sin = tirx.Let(var, value, cos), tirx.Let(var, value, sin)
    return T.bind(cos), T.bind(sin)


def rope_append_gpu(
    h_q: int, h_kv: int, d: int, page_size: int, dtype: str, rope: RopeParams
) -> tirx.PrimFunc:
    """(qkv [t, (h_q + 2 h_kv) d], positions [t], pages (in place), slots [t]) -> q [t, h_q, d].
    RoPE over the whole head (rotary_dim == d), the layout every mlcx model uses."""
    if rope.rotary_dim != d or d % 2:
        raise ValueError(f"the GPU rope+append kernel rotates whole heads, not {rope.rotary_dim}")
    half, heads = d // 2, h_q + 2 * h_kv
    groups = max(1, THREADS // half)
    with IRBuilder() as ib, T.prim_func():
        T.func_name("rope_append_gpu")
        T.func_attr(KERNEL_ATTRS)
        tokens, qkv, positions, pages, slots, q_out = _params(h_q, h_kv, d, page_size, dtype)
        t = T.env_thread("blockIdx.x")
        tx = T.env_thread("threadIdx.x")
        with T.launch_thread(t, tokens), T.launch_thread(tx, groups * half):
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
