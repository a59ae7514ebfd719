"""How other threads talk to the engine: requests and aborts queue here and the one thread
that steps the engine takes them at the start of its next step, so only that thread touches
the scheduler and the KV cache manager.

An added request counts as waiting, and its id as in flight, from `add` until the stepping
thread has put it into the scheduler: a duplicate id or a full queue is refused in between.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass

from mlcx.errors import QueueFullError
from mlcx.runtime.lora.slots import LoraRef
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.matcher import CompiledConstraint


@dataclass(frozen=True, eq=False)
class NewRequest:
    request_id: str
    prompt_ids: list[int]
    params: SamplingParams
    max_new_tokens: int  # what fits the context window
    constraint: CompiledConstraint | None  # params.constraint, compiled
    images: tuple = ()  # PIL images, one per run of image tokens in the prompt
    lora: LoraRef | None = None  # the adapter's slot (runtime.lora), None: the base model


@dataclass(frozen=True)
class Abort:
    request_id: str


class Inbox:
    def __init__(self, max_waiting: int):
        self.max_waiting = max_waiting
        self._queue: queue.SimpleQueue[NewRequest | Abort] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued_ids: set[str] = set()  # of the adds not yet taken

    @property
    def queued(self) -> int:
        """Requests added and not yet taken."""
        return len(self._queued_ids)

    def empty(self) -> bool:
        return self._queue.empty()

    def add(
        self, request: NewRequest, in_flight: Container[str], waiting: Callable[[], int]
    ) -> None:
        """Queue `request` unless its id is in flight (here or in `in_flight`) or the requests
        waiting (here and `waiting()`) reach max_waiting."""
        with self._lock:
            rid = request.request_id
            if rid in in_flight or rid in self._queued_ids:
                raise ValueError(f"request {rid!r} is already in flight")
            count = len(self._queued_ids) + waiting()
            if count >= self.max_waiting:
                raise QueueFullError(
                    f"{count} requests are waiting (the limit is {self.max_waiting}); retry later"
                )
            self._queued_ids.add(rid)
            self._queue.put(request)

    def abort(self, request_id: str) -> None:
        self._queue.put(Abort(request_id))

    def take(self) -> Iterator[NewRequest | Abort]:
        """What is queued, in order (the stepping thread only). An added request leaves the
        queued set once the caller has applied it, when the iteration resumes: in the
        scheduler before it leaves, a duplicate id is always seen in one of them."""
        while not self._queue.empty():
            item = self._queue.get()
            yield item
            if isinstance(item, NewRequest):
                with self._lock:
                    self._queued_ids.discard(item.request_id)
