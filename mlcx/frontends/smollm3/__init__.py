"""SmolLM3 (family.py)."""
