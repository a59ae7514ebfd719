"""A soak benchmark for an OpenAI-compatible server: a mixed load for minutes on end, with the
server's resident memory read from its /metrics every interval (issue 32).

Each of `clients` loops over random requests until the time is up: chat or plain completions,
streamed or not, greedy or sampled, with or without stop strings, prompts of 4 to
`max_prompt_words` words, and one streamed request in ten hung up after its first chunks (a
client that disconnects). After the load the server must fall back to idle: no running or
waiting requests and no KV blocks held.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from mlcx.bench.measure.serve_load import first_model

_WORDS = [
    "the",
    "river",
    "city",
    "train",
    "music",
    "garden",
    "ocean",
    "star",
    "market",
    "bridge",
    "forest",
    "library",
    "people",
    "build",
    "learn",
    "idea",
    "weather",
    "mountain",
    "history",
    "science",
    "story",
    "letter",
    "window",
    "morning",
    "evening",
]
HANG_UP_SHARE = 0.1
_IDLE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SoakSpec:
    url: str
    minutes: float = 10.0  # measured, after the warm-up
    warmup_minutes: float = 2.0
    clients: int = 16
    sample_every_s: float = 60.0
    max_prompt_words: int = 900
    model: str | None = None
    api_key: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        if self.minutes <= 0 or self.warmup_minutes < 0 or self.sample_every_s <= 0:
            raise ValueError("minutes and sample_every_s must be positive, warmup_minutes >= 0")
        if self.clients < 1 or self.max_prompt_words < 4:
            raise ValueError("clients must be >= 1 and max_prompt_words >= 4")


@dataclass(frozen=True)
class SoakSample:
    seconds: float  # since the load started
    rss_bytes: float
    requests: int  # finished so far (hang-ups included)
    errors: int
    running: float
    waiting: float
    kv_usage: float


@dataclass
class SoakReport:
    spec: SoakSpec
    samples: list[SoakSample] = field(default_factory=list)  # the measured window
    idle: SoakSample | None = None  # after the load, once the server is idle
    hang_ups: int = 0
    last_error: str | None = None

    @property
    def rss_growth(self) -> float:
        """Resident memory at the end of the window over its start, minus one."""
        first, last = self.samples[0].rss_bytes, self.samples[-1].rss_bytes
        return last / first - 1

    def lines(self) -> list[str]:
        out = ["minute   RSS MiB   requests  errors  running  waiting  KV usage"]
        for s in [*self.samples, *([self.idle] if self.idle else [])]:
            label = f"{s.seconds / 60:6.1f}" if s is not self.idle else "  idle"
            out.append(
                f"{label}  {s.rss_bytes / 2**20:8.1f}  {s.requests:9d}  {s.errors:6d}  "
                f"{s.running:7.0f}  {s.waiting:7.0f}  {s.kv_usage:8.3f}"
            )
        out.append(
            f"RSS growth over the {self.spec.minutes:g} measured minutes: "
            f"{100 * self.rss_growth:+.2f}%; hang-ups {self.hang_ups}"
            + (f"; last error: {self.last_error}" if self.last_error else "")
        )
        return out

    def to_dict(self) -> dict:
        return {**asdict(self), "rss_growth": self.rss_growth}


@dataclass
class _Counts:
    requests: int = 0
    errors: int = 0
    hang_ups: int = 0
    last_error: str | None = None


async def run_soak(spec: SoakSpec, say: Callable[[str], None] = print) -> SoakReport:
    report = SoakReport(spec)
    counts = _Counts()
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    timeout = httpx.Timeout(600.0, connect=10.0)
    async with httpx.AsyncClient(base_url=spec.url, headers=headers, timeout=timeout) as client:
        model = spec.model or await first_model(client)
        started = time.monotonic()
        stop_at = started + 60 * (spec.warmup_minutes + spec.minutes)
        clients = [
            asyncio.create_task(_client(client, model, spec, i, stop_at, counts))
            for i in range(spec.clients)
        ]
        for at in sample_times(spec, started):
            await asyncio.sleep(max(at - time.monotonic(), 0))
            report.samples.append(await _sample(client, at - started, counts))
            say(report.lines()[len(report.samples)])
        await asyncio.gather(*clients)
        report.idle = await _wait_idle(client, started, counts)
    report.hang_ups, report.last_error = counts.hang_ups, counts.last_error
    return report


def sample_times(spec: SoakSpec, started: float) -> list[float]:
    """Every `sample_every_s` from the end of the warm-up, and the end of the load."""
    first = started + 60 * spec.warmup_minutes
    last = first + 60 * spec.minutes
    ticks = int(60 * spec.minutes / spec.sample_every_s)
    times = [first + k * spec.sample_every_s for k in range(ticks + 1)]
    return times if last - times[-1] < 1e-6 else [*times, last]


async def _client(client, model: str, spec: SoakSpec, index: int, stop_at: float, counts):
    rnd = random.Random(spec.seed * 1000 + index)
    while time.monotonic() < stop_at:
        chat, stream = rnd.random() < 0.5, rnd.random() < 0.6
        body = _request(rnd, model, spec.max_prompt_words, chat)
        hang_up = stream and rnd.random() < HANG_UP_SHARE
        try:
            await (_stream(client, chat, body, hang_up) if stream else _plain(client, chat, body))
            counts.hang_ups += hang_up
        except (httpx.HTTPError, RuntimeError) as err:
            counts.errors += 1
            counts.last_error = f"{type(err).__name__}: {err}"[:300]
        counts.requests += 1


def _request(rnd: random.Random, model: str, max_words: int, chat: bool) -> dict:
    prompt = " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(4, max_words)))
    body: dict = {"model": model, "max_tokens": rnd.randint(8, 128)}
    if rnd.random() < 0.5:
        body.update(temperature=0.8, top_p=0.9, seed=rnd.randint(0, 1 << 30))
    else:
        body["temperature"] = 0
    if rnd.random() < 0.3:
        body["stop"] = rnd.choice([["."], ["\n\n"], ["the", "and"]])
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def _path(chat: bool) -> str:
    return "/v1/chat/completions" if chat else "/v1/completions"


async def _plain(client: httpx.AsyncClient, chat: bool, body: dict) -> None:
    response = await client.post(_path(chat), json=body)
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")


async def _stream(client: httpx.AsyncClient, chat: bool, body: dict, hang_up: bool) -> None:
    body = {**body, "stream": True}
    async with client.stream("POST", _path(chat), json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {(await response.aread())[:200]}")
        chunks = 0
        async for line in response.aiter_lines():
            chunks += line.startswith("data:")
            if hang_up and chunks >= 2:
                return  # leaving the block closes the connection mid-stream
            if line.strip() == "data: [DONE]":
                return
    raise RuntimeError("the stream ended without data: [DONE]")


async def _sample(client: httpx.AsyncClient, seconds: float, counts: _Counts) -> SoakSample:
    text = (await client.get("/metrics")).text
    values = {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.labels
    }
    if "process_resident_memory_bytes" not in values:
        raise RuntimeError("the server's /metrics has no process_resident_memory_bytes")
    return SoakSample(
        seconds,
        values["process_resident_memory_bytes"],
        counts.requests,
        counts.errors,
        values.get("mlcx_requests_running", float("nan")),
        values.get("mlcx_requests_waiting", float("nan")),
        values.get("mlcx_kv_cache_usage_ratio", float("nan")),
    )


async def _wait_idle(client: httpx.AsyncClient, started: float, counts: _Counts) -> SoakSample:
    deadline = time.monotonic() + _IDLE_TIMEOUT_S
    while True:
        sample = await _sample(client, time.monotonic() - started, counts)
        idle = sample.running == 0 and sample.waiting == 0 and sample.kv_usage == 0
        if idle or time.monotonic() > deadline:
            return sample
        await asyncio.sleep(0.5)
