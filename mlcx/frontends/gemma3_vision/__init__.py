"""Gemma 3 with images: the SigLIP vision tower and Gemma 3's multimodal projector (the
`embed_image` function of an artifact), and the text model of a Gemma3ForConditionalGeneration
folder."""
