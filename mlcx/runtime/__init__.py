"""The engine every front door shares, one folder per concept, bottom-up: `kv/` (which KV
blocks each sequence holds, no tensors), `state/` (which state slot each sequence of a hybrid
model holds, and its saved states; no tensors), `lora/` (LoRA adapters by name, their slots
and stacked weights), `backends/` (runners that execute a compiled artifact's step on a
device, behind the `Runner` protocol), `text/` (tokenizer, chat template, prompt encoding,
detokenizing, stop strings), `vision/` (images: decoding, preprocessing, the encoder, prompt
layout), `structured/` (constraints on the output and their token masks),
`sample/` (sampling parameters and the sampler), `speculative/` (draft proposers and
verification), `core/` (the engine: scheduler, sequences, outputs), `openai_api/` (the OpenAI
API on the engine: schemas, plans, replies, one request's serving path). At the top, `api/`:
the APIs built on the engine (MLCEngine, LLM, chat sessions, embedders).
tests/test_layering.py holds that order.
"""
