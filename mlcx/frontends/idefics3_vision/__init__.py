"""Idefics3 / SmolVLM-style models with images: the SigLIP tower and Idefics3's connector
(pixel shuffle, then a linear projection) as the artifact's `embed_image`, and the Llama text
model of an Idefics3ForConditionalGeneration folder; or the encoder from llama.cpp's
`idefics3` mmproj GGUF beside the model's `llama` text GGUF (mmproj.py)."""
