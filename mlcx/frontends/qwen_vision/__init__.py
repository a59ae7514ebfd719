"""The Qwen-VL vision tower (Qwen2.5-VL, Qwen3-VL) as an artifact's `embed_image`: dynamic
resolution (any image resized to whole 2x2 groups of patches within the processor's pixel
bounds), 2-D RoPE, window attention (Qwen2.5-VL), a resampled position grid and deepstack
mergers (Qwen3-VL). The text models are the qwen2_5_vl and qwen3_vl families."""
