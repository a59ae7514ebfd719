"""The Relax rewrites that put mlcx's CPU kernels (mlcx.kernels.cpu) into a model.

The nn graph emits one generic TE compute per linear layer (dequantize + matmul); on CPU
targets `fuse_linear` swaps each for a hand-written kernel, fusing the RMSNorm or SwiGLU that
feeds it and the residual add that follows (RoPE is fused into the KV append by
mlcx.passes.fuse_rope_append, shared with the GPU targets).
"""
