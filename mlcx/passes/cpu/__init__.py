"""The Relax rewrites that put mlcx's CPU kernels (mlcx.kernels.cpu) into a model.

The nn graph emits one generic TE compute per linear layer (dequantize + matmul); on CPU
targets `fuse_linear` swaps each for a hand-written kernel, fusing the RMSNorm or SwiGLU that
feeds it and the residual add that follows; `fuse_rope_append` fuses RoPE into the KV append.
"""
