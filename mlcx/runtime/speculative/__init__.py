"""Speculative decoding: proposers draft tokens, the target model verifies them in one step."""
