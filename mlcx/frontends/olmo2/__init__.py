"""OLMo 2 and OLMo 3 (family.py)."""
