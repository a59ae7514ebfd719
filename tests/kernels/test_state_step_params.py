"""The state-cache contract's step parameters (mlcx.kernels.step_params): models with state
layers take state_slots right after the page tables and their states right after kv_pages;
models without keep exactly the parameters they had."""

from __future__ import annotations

import pytest

from mlcx.kernels.step_params import (
    DECODE,
    KV_PAGES,
    LOGIT_ROWS,
    PAGE_TABLES,
    PARAMS,
    PREFILL,
    PREFILL_IMAGE,
    STATE_SLOTS,
    STATES,
    TOKENS,
    entry_inputs,
    param_shape,
    step_params,
)


def test_models_without_state_layers_keep_their_parameters():
    tables = tuple(PAGE_TABLES)
    assert step_params(PREFILL) == (TOKENS, *tables, LOGIT_ROWS)
    assert step_params(DECODE) == (TOKENS, *tables)
    assert entry_inputs(DECODE) == (TOKENS, *tables, KV_PAGES, PARAMS)


@pytest.mark.parametrize("function", [PREFILL, DECODE, PREFILL_IMAGE])
def test_state_slots_follow_the_page_tables_and_states_follow_kv_pages(function):
    plain, with_states = step_params(function), step_params(function, states=True)
    after = plain.index(tuple(PAGE_TABLES)[-1]) + 1
    assert with_states == (*plain[:after], STATE_SLOTS, *plain[after:])
    assert entry_inputs(function, states=True) == (*with_states, KV_PAGES, STATES, PARAMS)
    assert param_shape(STATE_SLOTS) == ("batch",)
