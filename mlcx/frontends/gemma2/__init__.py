"""Gemma 2 (family.py)."""
