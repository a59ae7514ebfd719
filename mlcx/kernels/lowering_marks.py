"""Attributes that mark a hand-written kernel as already in the shape some of TVM's lowering
passes would give it, so that the TIR pipeline "mlcx" (mlcx.passes.tir_pipeline) skips those
passes for it. A mark is a promise about the kernel; tests/passes/test_tir_pipeline.py checks
each marked kind keeps it."""

# scratch buffers allocated at exactly the size used: s_tir.CompactBufferAllocation changes
# nothing but rewrites indices by a zero offset
EXACT_BUFFERS = "mlcx.exact_buffers"
# no condition a loop could hoist, no virtual threads, no permuted-layout buffers, no no-op
# statements: HoistIfThenElse, InjectVirtualThread, InjectPermutedLayout and RemoveNoOp leave
# the lowered kernel unchanged
TIDY = "mlcx.tidy"
