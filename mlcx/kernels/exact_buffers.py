"""The attribute that marks a hand-written kernel whose scratch buffers are allocated at exactly
the size it uses (mlcx.passes.tir_pipeline skips TVM's buffer compaction for it)."""

EXACT_BUFFERS = "mlcx.exact_buffers"
