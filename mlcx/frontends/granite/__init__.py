"""Granite 3 (family.py)."""
