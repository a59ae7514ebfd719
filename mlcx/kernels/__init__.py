"""Tensor programs the model graphs call: TE computes (dequantize-matmul, embedding, RoPE),
the paged-KV ops (`attention`), and hand-written TIR kernels per device kind (`cpu/`).

Kept below `frontends` (which emit them) and `passes` (which schedule them or swap them in):
a kernel is written once here, used by every architecture, and chosen per target by the passes.
"""
