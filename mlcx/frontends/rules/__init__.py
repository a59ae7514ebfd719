"""Config rules: the small pieces a family's declaration composes to read its config. A rule
takes the source's reader (HFConfigReader, or GGUFCheckpoint for llama.cpp metadata) and the
config read so far, and returns the DecoderConfig fields it decides (or raises
UnsupportedModelError naming what the checkpoint asks for). `hf.py`: the keys every Hugging
Face decoder shares and generic rules; `gguf.py`: the same for GGUF metadata; `layers.py`:
sliding-window and local/global layer patterns; `experts.py`: mixtures of experts."""
