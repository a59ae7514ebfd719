"""The step parameters a hybrid model's compiled functions add (the state-cache contract),
beside mlcx.kernels.step_params, which does not name them yet: one int32 array
`state_slots` [batch] right after the page-table arrays, the `states` tuple right after
`kv_pages`, and the entry `copy_states(states, pairs)`. Models without state layers keep
step_params' parameters exactly. No TVM import here."""

from __future__ import annotations

from mlcx.kernels.step_params import KV_PAGES, PAGE_TABLES, PARAMS, step_params

STATE_SLOTS = "state_slots"  # int32 [batch]: each sequence's slot, in the step's order
STATES = "states"  # the state tensors, slot axis first (mlcx.artifact.state_tensors)
COPY_STATES = "copy_states"  # (states, pairs [n, 2] int32): row src -> row dst of each
STATE_SLOTS_SHAPE = ("batch",)


def with_state_slots(params: tuple[str, ...]) -> tuple[str, ...]:
    """`params` with STATE_SLOTS inserted right after the last page-table array."""
    last = max(params.index(name) for name in PAGE_TABLES)
    return (*params[: last + 1], STATE_SLOTS, *params[last + 1 :])


def stateful_step_params(function: str) -> tuple[str, ...]:
    """The array parameters of a hybrid model's `function` (prefill, decode, ...), in order."""
    return with_state_slots(step_params(function))


def stateful_entry_inputs(function: str) -> tuple[str, ...]:
    """Every input of a hybrid model's exported step function, in order."""
    return (*stateful_step_params(function), KV_PAGES, STATES, PARAMS)
