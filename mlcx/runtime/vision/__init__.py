"""Images in prompts: decoding and checking image bytes, the model's preprocessing, the
encoder with a cache by content hash, and where image tokens sit in a prompt."""
