"""A load generator for OpenAI-compatible servers (mlcx serve, vLLM, llama.cpp, ...).

`run_load` keeps `concurrency` streaming chat requests in flight until `num_requests` are
done and reports time to first token and inter-token latency (p50/p95, from the arrival of
content chunks at the client), aggregate output tokens per second and requests per second.
`prefix_ttft` measures the time to first token of a long system prompt seen for the first
time (cold) and again with another question (warm: a prefix cache skips its prefill).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from dataclasses import asdict, dataclass, field

import httpx
import numpy as np

QUESTIONS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how a refrigerator works.",
    "Describe the water cycle to a child.",
    "List some ideas for a weekend trip.",
]
_TEXT = (
    "the model reads a long document about rivers mountains cities trains music history "
    "science weather gardens oceans stars markets bridges forests libraries and people who "
    "build things carefully every day while learning new ideas from each other"
)
_WORDS = _TEXT.split()


@dataclass(frozen=True)
class LoadSpec:
    url: str  # base URL, e.g. http://127.0.0.1:8000
    concurrency: int = 1
    num_requests: int | None = None  # default: one per concurrent stream
    max_tokens: int = 64
    model: str | None = None  # default: the first model the server lists
    api_key: str | None = None
    system_prompt: str | None = None
    # N distinct ~system_words-word system prompts, each request sending one of them (0:
    # none): the workload a prefix-aware router is for.
    system_prompts: int = 0
    system_words: int = 750
    ignore_eos: bool = True  # an extension (mlcx, vLLM); other servers ignore it
    response_format: dict | None = None  # OpenAI's, sent as is (e.g. a json_schema)
    timeout_s: float = 3600.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.num_requests is not None and self.num_requests < 1:
            raise ValueError(f"num_requests must be >= 1, got {self.num_requests}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.system_prompts < 0 or self.system_words < 1:
            raise ValueError(
                f"system_prompts must be >= 0 and system_words >= 1, got "
                f"{self.system_prompts} and {self.system_words}"
            )

    @property
    def total_requests(self) -> int:
        return self.num_requests or self.concurrency


@dataclass
class RequestResult:
    ttft_s: float | None = None
    gaps_s: list[float] = field(default_factory=list)  # between content chunks
    prompt_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class LoadReport:
    concurrency: int
    requests: int
    failed: int
    duration_s: float
    output_tokens: int
    output_tok_s: float
    requests_per_s: float
    ttft_p50_s: float
    ttft_p95_s: float
    itl_p50_s: float
    itl_p95_s: float
    errors: tuple[str, ...] = ()
    response_format: str = "none"  # the type of the response_format sent, if any

    def to_dict(self) -> dict:
        return asdict(self)


def long_system_prompt(words: int, seed: int | None = None) -> str:
    """~`words` plain English words (about 1.3 tokens each), unique per seed."""
    rng = random.Random(seed)
    salt = uuid.UUID(int=rng.getrandbits(128)).hex[:8]
    return f"[{salt}] " + " ".join(rng.choice(_WORDS) for _ in range(words))


async def run_load(spec: LoadSpec) -> LoadReport:
    """Streams `spec.total_requests` chat requests, `spec.concurrency` at a time."""
    async with _client(spec) as client:
        model = spec.model or await first_model(client)
        todo = iter(range(spec.total_requests))
        results: list[RequestResult] = []
        systems = system_prompt_per_request(spec)

        async def worker() -> None:
            for i in todo:
                system = systems[i] if systems else spec.system_prompt
                results.append(await stream_chat(client, spec, model, QUESTIONS[i % 4], system))

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(spec.concurrency)))
        return summarize(spec, results, time.perf_counter() - start)


def distinct_system_prompts(spec: LoadSpec) -> list[str]:
    """The workload's system prompts: the same ones on every run (fixed seeds)."""
    return [long_system_prompt(spec.system_words, seed=k) for k in range(spec.system_prompts)]


def system_prompt_per_request(spec: LoadSpec) -> list[str]:
    """Which of them each request sends: each equally often, in an order shuffled with a
    fixed seed rather than in turn, so that round-robin over replicas does not keep each
    prompt on one replica by accident."""
    prompts = distinct_system_prompts(spec)
    order = [prompts[i % len(prompts)] for i in range(spec.total_requests if prompts else 0)]
    random.Random(0).shuffle(order)
    return order


async def warm_up(spec: LoadSpec) -> None:
    """One short request, so first-call costs (kernel loading, caches) stay out of the numbers."""
    short = LoadSpec(
        **{**asdict(spec), "max_tokens": 2, "system_prompt": None, "system_prompts": 0}
    )
    async with _client(short) as client:
        result = await stream_chat(client, short, spec.model or await first_model(client), "Hi")
    if result.error:
        raise RuntimeError(f"the warm-up request failed: {result.error}")


async def prefix_ttft(spec: LoadSpec, words: int = 750) -> tuple[RequestResult, RequestResult]:
    """(cold, warm) results of two requests sharing a fresh ~`words`-word system prompt."""
    system = long_system_prompt(words)
    shared = LoadSpec(**{**asdict(spec), "system_prompt": system})
    async with _client(spec) as client:
        model = spec.model or await first_model(client)
        cold = await stream_chat(client, shared, model, QUESTIONS[0])
        warm = await stream_chat(client, shared, model, QUESTIONS[1])
    return cold, warm


def _client(spec: LoadSpec) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    # A fresh connection per request: llama-server closes a kept-alive connection after a
    # streamed answer without saying so, and the next request on it failed ("Server
    # disconnected"). Connecting over loopback costs well under a millisecond.
    limits = httpx.Limits(max_connections=spec.concurrency + 1, max_keepalive_connections=0)
    return httpx.AsyncClient(
        base_url=spec.url, headers=headers, timeout=spec.timeout_s, limits=limits
    )


async def first_model(client: httpx.AsyncClient) -> str:
    response = await client.get("/v1/models")
    response.raise_for_status()
    return response.json()["data"][0]["id"]


async def stream_chat(
    client: httpx.AsyncClient,
    spec: LoadSpec,
    model: str,
    question: str,
    system: str | None = None,
) -> RequestResult:
    """One streamed chat request; `system` (default: the spec's system prompt) goes first."""
    messages = [{"role": "user", "content": question}]
    system = system or spec.system_prompt
    if system:
        messages.insert(0, {"role": "system", "content": system})
    body = {
        "model": model,
        "messages": messages,
        "max_tokens": spec.max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": spec.ignore_eos,
    }
    if spec.response_format is not None:
        body["response_format"] = spec.response_format
    result = RequestResult()
    start = last = time.perf_counter()
    try:
        async with client.stream("POST", "/v1/chat/completions", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
            async for line in response.aiter_lines():
                last = _on_event(result, line, start, last)
    except (httpx.HTTPError, RuntimeError) as err:
        result.error = str(err) or type(err).__name__
    result.latency_s = time.perf_counter() - start
    return result


def _on_event(result: RequestResult, line: str, start: float, last: float) -> float:
    """Record one SSE line; returns the time of the latest content chunk."""
    if not line.startswith("data: ") or line == "data: [DONE]":
        return last
    chunk = json.loads(line[6:])
    if chunk.get("usage"):
        result.prompt_tokens = chunk["usage"]["prompt_tokens"]
        result.output_tokens = chunk["usage"]["completion_tokens"]
    if not any(c.get("delta", {}).get("content") for c in chunk.get("choices", ())):
        return last
    now = time.perf_counter()
    if result.ttft_s is None:
        result.ttft_s = now - start
    else:
        result.gaps_s.append(now - last)
    return now


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def summarize(spec: LoadSpec, results: list[RequestResult], duration_s: float) -> LoadReport:
    ok = [r for r in results if r.error is None]
    # Servers that send no usage: count content chunks instead (one token each, usually).
    tokens = sum(r.output_tokens or len(r.gaps_s) + (r.ttft_s is not None) for r in ok)
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    gaps = [g for r in ok for g in r.gaps_s]
    return LoadReport(
        concurrency=spec.concurrency,
        requests=len(ok),
        failed=len(results) - len(ok),
        duration_s=duration_s,
        output_tokens=tokens,
        output_tok_s=tokens / duration_s if duration_s > 0 else 0.0,
        requests_per_s=len(ok) / duration_s if duration_s > 0 else 0.0,
        ttft_p50_s=_percentile(ttfts, 50),
        ttft_p95_s=_percentile(ttfts, 95),
        itl_p50_s=_percentile(gaps, 50),
        itl_p95_s=_percentile(gaps, 95),
        errors=tuple(sorted({r.error for r in results if r.error})),
        response_format=(spec.response_format or {}).get("type", "none"),
    )
