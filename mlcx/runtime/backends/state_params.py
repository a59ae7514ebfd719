"""The step parameters a hybrid model's compiled functions add (the state-cache contract),
with the names and signatures the kernels side gives mlcx.kernels.step_params on its branch
(`step_params(function, states)`, `entry_inputs(function, states)`, STATE_SLOTS, STATES,
COPY_STATES): once both are merged, this module goes and its importers import those. One int32
array `state_slots` [batch] right after the page-table arrays, the `states` tuple right after
`kv_pages`, and the entry `copy_states(states, pairs)`. Models without state layers keep
step_params' parameters exactly. No TVM import here."""

from __future__ import annotations

from mlcx.kernels import step_params as base
from mlcx.kernels.step_params import KV_PAGES, PAGE_TABLES, PARAMS

STATE_SLOTS = "state_slots"  # int32 [batch]: each sequence's slot, in the step's order
STATES = "states"  # the state tensors, slot axis first (mlcx.artifact.state_tensors)
COPY_STATES = "copy_states"  # (states, pairs [n, 2] int32): row src -> row dst of each


def step_params(function: str, states: bool = False) -> tuple[str, ...]:
    """The array parameters of `function`, in order; with `states`, STATE_SLOTS right after
    the last page-table array."""
    params = base.step_params(function)
    if not states:
        return params
    after = params.index(tuple(PAGE_TABLES)[-1]) + 1
    return (*params[:after], STATE_SLOTS, *params[after:])


def entry_inputs(function: str, states: bool = False) -> tuple[str, ...]:
    """Every input of an exported step function, in order, as a WebGPU plan lists them."""
    held = (KV_PAGES, STATES) if states else (KV_PAGES,)
    return (*step_params(function, states), *held, PARAMS)
