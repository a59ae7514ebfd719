"""Hand-scheduled CPU kernels and the Relax rewrites that put them into a model.

The nn graph emits one generic TE compute per linear layer (dequantize + matmul); on CPU
targets `rewrite_linear` swaps each for a kernel built here, fusing the RMSNorm or SwiGLU that
feeds it and the residual add that follows. Kernels are TIR written against logical vector
widths taken from the TVM target, so LLVM maps them onto AVX2, AVX-512 (and VNNI) or NEON.
"""
