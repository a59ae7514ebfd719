"""BERT-family encoders (bge, e5, all-MiniLM): bidirectional attention, absolute position and
token-type embeddings, post-LayerNorm blocks, GELU MLP; embedding models only."""
