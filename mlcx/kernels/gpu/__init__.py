"""Hand-written GPU kernels (TIR), shared by every GPU target: cuda, metal, webgpu/vulkan,
iphone and android. Workgroup sizes and tiles are chosen per kernel from the GPU config;
subgroup (warp) shuffles are used where the target has them, workgroup memory where not."""
