"""What the mixture-of-experts families (qwen3_moe, mixtral, olmoe) share: their config keys
(config.py) and where their experts' weights live (weights.py)."""
