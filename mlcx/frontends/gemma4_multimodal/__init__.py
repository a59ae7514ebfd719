"""Gemma 4's text model read from a multimodal (Gemma4ForConditionalGeneration) folder."""
