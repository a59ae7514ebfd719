"""Sampling: the per-request `SamplingParams`, each choice's sampling state (generator,
penalty counts, constraint matcher), and the batched sampler over numpy logits with its
penalties, temperature and truncation (top-k, top-p, min-p) and scratch logits buffer."""
