"""The parameters of the compiled step functions `prefill` and `decode`, written once: their
names, their order and the symbolic shapes of the int32 arrays among them.

The model exports the functions with these parameters (frontends.nn.causal_lm), the runners
pass a step's arrays in this order (runtime.forward_batch), and a WebGPU plan lists them per
function, where the browser runtime reads them (web/src/step.js). Each function takes its
`step_params`, then the KV pages of every layer (`kv_pages`, see kv_layout), then the weights.
No TVM import here: the runtime reads this without TVM's compiler.
"""

from __future__ import annotations

PREFILL = "prefill"
DECODE = "decode"
COPY_PAGES = "copy_pages"
ENTRY_FUNCTIONS = (PREFILL, DECODE, COPY_PAGES)

TOKENS = "input_ids"
LOGIT_ROWS = "logit_positions"
KV_PAGES = "kv_pages"
PARAMS = "packed_params"  # the weights tuple, as TVM's exporter names it in packed mode

# The page-table arrays of one step, in parameter order, with their shapes; PageTableArrays
# (runtime.kv.page_tables) has a field of each name.
PAGE_TABLES: dict[str, tuple[str, ...]] = {
    "positions": ("tokens",),
    "slots": ("tokens",),
    "q_indptr": ("batch_plus_one",),
    "page_indptr": ("batch_plus_one",),
    "page_values": ("nnz_pages",),
    "last_page_len": ("batch",),
}
_SHAPES = {TOKENS: ("tokens",), **PAGE_TABLES, LOGIT_ROWS: ("num_logits",)}
_PARAMS = {
    # logits for the rows named by logit_positions: any ragged batch of new tokens
    PREFILL: (TOKENS, *PAGE_TABLES, LOGIT_ROWS),
    # one new token per sequence, logits for every row
    DECODE: (TOKENS, *PAGE_TABLES),
}


def step_params(function: str) -> tuple[str, ...]:
    """The int32 array parameters of `function` (prefill or decode), in order."""
    if function not in _PARAMS:
        raise ValueError(f"{function!r} is not a step function ({PREFILL} or {DECODE})")
    return _PARAMS[function]


def step_function(num_tokens: int, batch_size: int, explicit_rows: bool) -> str:
    """The function that computes one step: decode when every sequence has one new token and
    the logits of every row are wanted, prefill otherwise."""
    return DECODE if num_tokens == batch_size and not explicit_rows else PREFILL


def param_shape(name: str) -> tuple[str, ...]:
    """The symbolic shape of a step parameter."""
    return _SHAPES[name]


def entry_inputs(function: str) -> tuple[str, ...]:
    """Every input of an exported step function, in order, as a WebGPU plan lists them."""
    return (*step_params(function), KV_PAGES, PARAMS)
