"""Idefics3 / SmolVLM-style models with images: the SigLIP tower and Idefics3's connector
(pixel shuffle, then a linear projection) as the artifact's `embed_image`, and the Llama text
model of an Idefics3ForConditionalGeneration folder. Each image is one global tile (the
processor's do_image_splitting=False path); tiling is not done yet."""
