"""Benchmarks: measuring mlcx (and OpenAI-compatible peers) the same way every time."""
