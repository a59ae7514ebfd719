"""RoPE on the fused qkv projection plus the KV append, as one CPU kernel.

Replaces reshape -> split -> [rms_norm(q), rms_norm(k)] -> rope(q), rope(k) -> kv_append: per
token it evaluates the RoPE cos/sin once per feature (TVM's frequency formulas, as
mlcx.kernels.rope uses) instead of once per head and feature, RMS-normalizes each q and k head
where the model has q/k norms (Qwen3; their weights are two extra [d] inputs after slots),
rotates q into its own output and k straight into the pages, and stores v (an int8 cache
quantizes the rotated k and the v rows: mlcx.kernels.cpu.kv_pages).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kv_pages import PageGeometry, store_kv
from mlcx.kernels.rope import RopeParams, check_rotary, rope_freq_func

SERIAL_TOKENS = 8


def _partners(head_dim: int, rotary: int) -> tuple[list[int], list[bool]]:
    """For each lane: the lane it pairs with in the half-split layout, and whether negated."""
    half = rotary // 2
    lanes, negate = [], []
    for d in range(head_dim):
        if d < half:
            lanes.append(d + half)
            negate.append(True)
        elif d < rotary:
            lanes.append(d - half)
            negate.append(False)
        else:
            lanes.append(d)
            negate.append(False)
    return lanes, negate


def _rotate(x, cos, sin, head_dim: int, rotary: int):
    """x (float32 x d) rotated with per-lane cos/sin vectors (cos 1, sin 0 past rotary)."""
    lanes, negate = _partners(head_dim, rotary)
    signed = T.Shuffle(
        [x, -x], [lane + head_dim * neg for lane, neg in zip(lanes, negate, strict=True)]
    )
    return cos * x + sin * signed


def _tables(rope: RopeParams, position, cos, sin, head_dim: int) -> None:
    freq = rope_freq_func(rope.scaling)
    with T.serial(0, head_dim) as d:
        c, s, lets = freq(T.Cast("float32", position), d, rope.rotary_dim, rope.theta, "float32")
        for var, value in lets.items():
            c, s = tirx.Let(var, value, c), tirx.Let(var, value, s)
        inside = d < rope.rotary_dim
        T.buffer_store(cos, T.Select(inside, c, vec.f32(1.0)), [d])
        T.buffer_store(sin, T.Select(inside, s, vec.f32(0.0)), [d])


@dataclass(frozen=True)
class _HeadNorm:
    """The q and k norm weights [d] and epsilon of a model with per-head q/k RMSNorm."""

    q: tirx.Buffer
    k: tirx.Buffer
    eps: float

    def apply(self, x, weight: tirx.Buffer, d: int):
        """x (float32 x d) * rsqrt(mean(x^2) + eps) * weight."""
        x = T.bind(x)
        mean = T.bind(vec.hsum(x * x, d) / vec.f32(d))
        scale = vec.f32(1.0) / T.sqrt(mean + vec.f32(self.eps))
        return x * vec.splat(T.bind(scale), d) * vec.to_f32(weight[vec.ramp(0, d)])


def norm_fusable(head_dim: int) -> bool:
    """The lane sum halves the vector down to one lane, so it needs a power-of-two head."""
    return head_dim & (head_dim - 1) == 0


def rope_append_cpu(
    h_q: int, geo: PageGeometry, rope: RopeParams, norm_eps: float | None = None
) -> tirx.PrimFunc:
    """(qkv [t, (h_q + 2 h_kv) d], positions [t], pages (in place), slots [t]
    [, q_norm [d], k_norm [d] when norm_eps is given]) -> q [t, h_q, d]; RoPE over the first
    rope.rotary_dim features of each head."""
    if norm_eps is not None and not norm_fusable(geo.head_dim):
        raise ValueError(f"q/k norms need a power-of-two head_dim here, not {geo.head_dim}")
    check_rotary(rope.rotary_dim, geo.head_dim)
    width = (h_q + 2 * geo.h_kv) * geo.head_dim
    with IRBuilder() as ib, T.prim_func():
        T.func_name("rope_append_cpu")
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        tokens = tirx.Var("tokens", "int64")
        qkv = T.match_buffer(T.arg("qkv", T.handle()), (tokens, width), geo.io_dtype)
        positions = T.match_buffer(T.arg("positions", T.handle()), (tokens,), "int32")
        pages = geo.pages_param()
        slots = T.match_buffer(T.arg("slots", T.handle()), (tokens,), "int32")
        norm = None
        if norm_eps is not None:
            q_norm, k_norm = (
                T.match_buffer(T.arg(n, T.handle()), (geo.head_dim,), geo.io_dtype)
                for n in ("q_norm", "k_norm")
            )
            norm = _HeadNorm(q_norm, k_norm, norm_eps)
        q_out = T.match_buffer(T.arg("q", T.handle()), (tokens, h_q, geo.head_dim), geo.io_dtype)
        views = geo.views(pages)
        # A parallel launch costs more than rotating the few tokens of a decode step.
        with T.If(tokens <= SERIAL_TOKENS):
            with T.Then(), T.serial(0, tokens) as t:
                _token(h_q, geo, rope, norm, (qkv, positions, slots, q_out, views), t)
            with T.Else(), T.parallel(0, tokens) as t:
                _token(h_q, geo, rope, norm, (qkv, positions, slots, q_out, views), t)
    return ib.get()


def _token(h_q: int, geo: PageGeometry, rope: RopeParams, norm: _HeadNorm | None, bufs, t):
    """Rotate token t's (normalized) q into q_out; rotate its k and store k and v at its slot."""
    qkv, positions, slots, q_out, views = bufs
    d, h_kv = geo.head_dim, geo.h_kv
    cos, sin = T.alloc_buffer((d,), "float32"), T.alloc_buffer((d,), "float32")
    _tables(rope, positions[t], cos, sin, d)
    cv, sv = T.bind(cos[vec.ramp(0, d)]), T.bind(sin[vec.ramp(0, d)])

    def head(h):
        return vec.to_f32(qkv[t, vec.ramp(h * d, d)])

    def normed(h, key: bool):
        if norm is None:
            return head(h)
        return T.bind(norm.apply(head(h), norm.k if key else norm.q, d))

    with T.serial(0, h_q) as h:
        x = normed(h, key=False)
        rotated = T.Cast(vec.vtype(geo.io_dtype, d), _rotate(x, cv, sv, d, rope.rotary_dim))
        T.buffer_store(q_out, rotated, [t, h, vec.ramp(0, d)])
    with T.If(slots[t] >= 0), T.Then(), T.serial(0, h_kv) as h:
        key = _rotate(normed(h_q + h, key=True), cv, sv, d, rope.rotary_dim)
        store_kv(geo, views, slots[t], h, key, head(h_q + h_kv + h))
