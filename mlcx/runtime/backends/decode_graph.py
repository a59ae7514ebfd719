"""Decode steps as CUDA graphs: persistent step buffers, one set per batch bucket.

An artifact compiled with CUDA graphs (mlcx.passes.gpu.cuda_graph) replays a captured graph
for every decode call whose symbolic shapes it has seen, without looking at the tensors it is
given: the step arrays must live at the same addresses on every call. So each bucket owns one
device buffer per step parameter, and a step writes its arrays into them (`copyfrom`), padded
to the bucket (mlcx.kernels.decode_buckets): extra rows decode token 0 at position 0 over a
scratch KV page that no sequence owns (and, for a hybrid model, in a scratch state slot that
none owns either), and page_values is padded to the bucket's capacity.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import numpy as np

from mlcx.kernels.decode_buckets import bucket_for, page_capacity
from mlcx.kernels.step_params import LORA_ROWS, LORA_SCALES, ROPE_POSITIONS, STATE_SLOTS
from mlcx.runtime.backends.forward_batch import ForwardBatch

log = logging.getLogger(__name__)


def padded_decode_inputs(
    batch: ForwardBatch, bucket: int, capacity: int, scratch_page: int, scratch_slot: int = 0
) -> dict[str, np.ndarray]:
    """The decode step arrays of `batch`, padded to `bucket` rows and `capacity` pages."""
    inputs = batch.step_inputs()
    rows = batch.tables.batch_size
    extra = bucket - rows
    page_size = batch.tables.page_size
    if extra < 0 or len(inputs["page_values"]) + extra > capacity:
        raise ValueError(f"a decode batch of {rows} rows does not fit bucket {bucket}")

    def tail(name: str, value: int) -> np.ndarray:
        return np.concatenate([inputs[name], np.full(extra, value, np.int32)])

    page_indptr = inputs["page_indptr"]
    pages = np.full(capacity, scratch_page, np.int32)
    pages[: len(inputs["page_values"])] = inputs["page_values"]
    out = {
        "input_ids": tail("input_ids", 0),
        "positions": tail("positions", 0),
        "slots": tail("slots", scratch_page * page_size),
        "q_indptr": np.arange(bucket + 1, dtype=np.int32),
        "page_indptr": np.concatenate(
            [page_indptr, page_indptr[-1] + np.arange(1, extra + 1, dtype=np.int32)]
        ).astype(np.int32),
        "page_values": pages,
        "last_page_len": tail("last_page_len", 1),
    }
    if STATE_SLOTS in inputs:
        out[STATE_SLOTS] = tail(STATE_SLOTS, scratch_slot)
    if ROPE_POSITIONS in inputs:
        pad = np.zeros((3, extra), np.int32)
        out[ROPE_POSITIONS] = np.concatenate([inputs[ROPE_POSITIONS], pad], axis=1)
    if LORA_ROWS in inputs:  # padding rows run no adapter
        out[LORA_ROWS] = tail(LORA_ROWS, 0)
        out[LORA_SCALES] = np.concatenate([inputs[LORA_SCALES], np.zeros(extra, np.float32)])
    return {name: out[name] for name in inputs}


class DecodeGraphs:
    """The decode steps of one runner: persistent per-bucket inputs (tensors made by `empty`)
    and the graph calls. Decode is compiled for graphs (memory bounded by `max_batch`, fixed
    addresses), so a step that cannot run as one goes through prefill's plain launches, which
    compute the same logits: a batch past `max_batch`, or every step once a capture failed.
    Each of those is said once in the log."""

    def __init__(
        self,
        empty,
        max_batch: int,
        context_window: int,
        page_size: int,
        scratch: int,
        scratch_slot: int = 0,
    ):
        self._empty = empty
        self.max_batch = max_batch
        self._context = context_window
        self._page_size = page_size
        self.scratch_page = scratch
        self.scratch_slot = scratch_slot
        self._buffers: dict[int, list] = {}
        self._captured: set[int] = set()
        self._failed = False
        self._said_too_large = False

    def run(self, batch: ForwardBatch, call: Callable[[list], object]):
        """The logits tensor of the decode step (its first batch_size rows are the batch's),
        from `call(args)` on the bucket's buffers; None where the step cannot run as a graph."""
        bucket = None if self._failed else bucket_for(batch.tables.batch_size, self.max_batch)
        if bucket is None:
            self._say_too_large(batch)
            return None
        args = self._write(batch, bucket)
        try:
            logits = call(args)
        except Exception as err:
            if bucket in self._captured:
                raise
            log.warning("CUDA graph capture failed (%s): decode runs with plain launches", err)
            self._failed = True
            return None
        self._captured.add(bucket)
        return logits

    @staticmethod
    def through_prefill(batch: ForwardBatch) -> ForwardBatch:
        """The same step as a prefill call: every row's logits, named explicitly."""
        return dataclasses.replace(batch, logit_rows=batch.tables.logit_positions)

    def _say_too_large(self, batch: ForwardBatch) -> None:
        if not self._failed and not self._said_too_large:
            self._said_too_large = True
            log.info(
                "decode batch of %d > %d (largest CUDA graph): plain launches for such steps",
                batch.tables.batch_size,
                self.max_batch,
            )

    def _write(self, batch: ForwardBatch, bucket: int) -> list:
        """The bucket's buffers, holding `batch`'s padded step arrays."""
        capacity = page_capacity(bucket, self._context, self._page_size)
        arrays = padded_decode_inputs(batch, bucket, capacity, self.scratch_page, self.scratch_slot)
        buffers = self._buffers.get(bucket)
        if buffers is None:
            buffers = [self._empty(a.shape, str(a.dtype)) for a in arrays.values()]
            self._buffers[bucket] = buffers
        for buffer, array in zip(buffers, arrays.values(), strict=True):
            buffer.copyfrom(array)
        return buffers
