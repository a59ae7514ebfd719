"""The data-only boundary between the scheduler and a model runner."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlcx.kernels.step_params import (
    IMAGE_EMBEDS,
    IMAGE_ROWS,
    LOGIT_ROWS,
    LORA_ROWS,
    LORA_SCALES,
    PREFILL_IMAGE,
    ROPE_POSITIONS,
    STATE_SLOTS,
    TOKENS,
    step_function,
    step_params,
)
from mlcx.runtime.kv import PageTableArrays

_FIELDS = {
    IMAGE_ROWS: "image_rows",
    IMAGE_EMBEDS: "image_embeds",
    LORA_ROWS: "lora_rows",
    LORA_SCALES: "lora_scales",
}


@dataclass(frozen=True, eq=False)
class ForwardBatch:
    """One step: new tokens of each scheduled sequence, their page tables, page copies to do
    first, and which new-token rows need logits (each sequence's last row by default). A
    hybrid model's step also names each sequence's state slot and the state copies to do
    first: waves of (src, dst) slot pairs, one `copy_states` call each, in order (within a
    wave the pairs are independent: runtime/state/copies.py)."""

    input_ids: np.ndarray  # int32 [t]
    tables: PageTableArrays
    copies: list[tuple[int, int]] = field(default_factory=list)
    logit_rows: np.ndarray | None = None  # int32 [n]; None: each sequence's last new token
    # images: the embeddings row of each new token (-1: its own token's), and the rows
    image_rows: np.ndarray | None = None  # int32 [t]
    image_embeds: np.ndarray | None = None  # float32 [image tokens, hidden]
    # a model with LoRA adapter slots: each token's slot (0: none) and scale (runtime.lora)
    lora_rows: np.ndarray | None = None  # int32 [t]
    lora_scales: np.ndarray | None = None  # float32 [t]
    state_slots: np.ndarray | None = None  # int32 [batch]; None: a model without state
    state_copies: list[list[tuple[int, int]]] = field(default_factory=list)
    rope_positions: np.ndarray | None = None  # int32 [3, t]; None: a model without M-RoPE

    def __post_init__(self) -> None:
        if len(self.input_ids) != self.tables.num_new_tokens:
            raise ValueError(
                f"{len(self.input_ids)} input ids for {self.tables.num_new_tokens} new tokens"
            )
        slots = self.state_slots
        if slots is not None and len(slots) != self.tables.batch_size:
            raise ValueError(f"{len(slots)} state slots for {self.tables.batch_size} sequences")

    @property
    def function(self) -> str:
        """The compiled function that computes this step (prefill or decode)."""
        if self.image_embeds is not None:
            return PREFILL_IMAGE
        t = self.tables
        return step_function(t.num_new_tokens, t.batch_size, self.logit_rows is not None)

    def step_inputs(self) -> dict[str, np.ndarray]:
        """The arrays `function` takes before the KV pages, by parameter name, in order."""
        states, lora = self.state_slots is not None, self.lora_rows is not None
        names = step_params(self.function, states, lora, mrope=self.rope_positions is not None)
        return {name: self._array(name) for name in names}

    def _array(self, name: str) -> np.ndarray:
        if name == TOKENS:
            return self.input_ids
        if name == STATE_SLOTS:
            assert self.state_slots is not None  # named only with state slots
            return self.state_slots
        if name == LOGIT_ROWS:
            return self.rows
        if name == ROPE_POSITIONS:
            assert self.rope_positions is not None  # named only with rope positions
            return self.rope_positions
        if name in (IMAGE_ROWS, IMAGE_EMBEDS, LORA_ROWS, LORA_SCALES):
            array = getattr(self, _FIELDS[name])
            assert array is not None  # function is PREFILL_IMAGE only with both; lora: both set
            return array
        return getattr(self.tables, name)

    @property
    def rows(self) -> np.ndarray:
        return self.tables.logit_positions if self.logit_rows is None else self.logit_rows
