"""Hand-written CPU kernels: linear layers (int16-activation and float, decode GEMV and prefill
GEMM), paged attention, KV append and RoPE.

Kernels are TIR written against logical vector widths taken from the TVM target, so LLVM maps
them onto AVX2, AVX-512 (and VNNI) or NEON. The Relax rewrites that put them into a model live
in mlcx.passes.cpu.
"""
