"""Ministral 3 (family.py)."""
