"""A request sharing a long system prompt with an earlier one prefills only its new tokens."""

from __future__ import annotations

import re

import httpx

from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving
from tests.support.tiny_models import CORPUS

SYSTEM = " ".join(CORPUS[:8])  # ~150 tokens with the tiny tokenizer
PARAMS = {"max_tokens": 8, "temperature": 0, "extra_body": {"ignore_eos": True}}


def ask(served, question: str):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    return served.client().chat.completions.create(model=served.model, messages=messages, **PARAMS)


def prompt_ids(engine, question: str) -> list[int]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    text = engine.prompts.chat_template.render(messages)
    return engine.tokenizer.encode(text, add_special_tokens=False)


def shared_full_blocks(a: list[int], b: list[int], page: int) -> int:
    common = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return min(common, len(b) - 1) // page * page


def test_second_request_prefills_only_new_tokens(artifact):
    with serving(artifact, EngineConfig(prefill_chunk=32)) as s:
        ask(s, "What is the capital of France?")
        before = s.engine.stats()
        warm = ask(s, "And of Italy?")
        after = s.engine.stats()
        with serving(artifact, EngineConfig(enable_prefix_caching=False)) as cold_server:
            cold = ask(cold_server, "And of Italy?")

        page = s.engine.artifact.config.page_size
        first, second = (
            prompt_ids(s.engine, "What is the capital of France?"),
            prompt_ids(s.engine, "And of Italy?"),
        )
        hit = after.prefix_hit_tokens - before.prefix_hit_tokens
        assert hit == shared_full_blocks(first, second, page) >= 128
        assert warm.usage.prompt_tokens == len(second)
        computed = after.computed_tokens - before.computed_tokens
        assert computed == len(second) - hit + PARAMS["max_tokens"] - 1
        assert warm.choices[0].message.content == cold.choices[0].message.content

        metrics = httpx.get(f"{s.url}/metrics").text
        ratio = float(re.search(r"^mlcx_prefix_cache_hit_ratio (\S+)$", metrics, re.M).group(1))
        assert ratio == after.prefix_hit_tokens / after.prefix_query_tokens > 0
