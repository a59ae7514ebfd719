"""Text in and out: the tokenizer of an artifact, the chat template (with the generic tool
format for templates that know no tools), `PromptEncoder`, the one way from a prompt or a
conversation to token ids, and streaming ids back to text with stop strings."""
