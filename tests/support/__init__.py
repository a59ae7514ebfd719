"""Helpers shared by the test suite (tiny random models, the default model's path)."""
