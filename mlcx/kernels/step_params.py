"""The parameters of the compiled step functions `prefill` and `decode`, written once: their
names, their order and the symbolic shapes of the int32 arrays among them.

The model exports the functions with these parameters (frontends.nn.causal_lm), the runners
pass a step's arrays in this order (runtime.forward_batch), and a WebGPU plan lists them per
function, where the browser runtime reads them (web/src/step.js). Each function takes its
`step_params`, then the KV pages of every layer (`kv_pages`, see kv_layout), then the weights.
No TVM import here: the runtime reads this without TVM's compiler.

Models with state layers (hybrids: Gated DeltaNet, short convolutions) take one more array,
`state_slots` [batch] (each sequence's state slot, in q_indptr's order) right after the page
tables, and their state tensors (`states`, a tuple: per state layer in layer order its tensors,
the slot axis first; mlcx.kernels.hybrid.shapes) right after `kv_pages`; they also export
`copy_states(states, pairs [n, 2])`. Models without state layers keep the parameters above.

Models with M-RoPE (Qwen-VL: DecoderConfig.mrope_sections) take `rope_positions` [3, tokens]
(each new token's time, height and width positions, which RoPE turns by in place of
`positions`) right after the page tables and state slots; the others keep the parameters above.
"""

from __future__ import annotations

PREFILL = "prefill"
DECODE = "decode"
COPY_PAGES = "copy_pages"
# prefill whose image-token rows take given embeddings (models with an image encoder only)
PREFILL_IMAGE = "prefill_image"
# the image encoder's function (vision/ of the artifact): pixels [3, S, S] -> image rows
EMBED_IMAGE = "embed_image"
PIXELS = "pixels"
ENTRY_FUNCTIONS = (PREFILL, DECODE, COPY_PAGES)
COPY_STATES = "copy_states"  # models with state layers: state rows src -> dst for each pair

TOKENS = "input_ids"
LOGIT_ROWS = "logit_positions"
KV_PAGES = "kv_pages"
IMAGE_ROWS = "image_rows"  # int32 [tokens]: the row of image_embeds for each token, or -1
IMAGE_EMBEDS = "image_embeds"  # float32 [image_tokens, hidden]: embed_image's output rows
STATE_SLOTS = "state_slots"  # int32 [batch]: each sequence's state slot (state layers only)
STATES = "states"  # the state tensors of every state layer, after kv_pages (state layers only)
ROPE_POSITIONS = "rope_positions"  # int32 [3, tokens]: M-RoPE's positions (M-RoPE models only)
PARAMS = "packed_params"  # the weights tuple, as TVM's exporter names it in packed mode
# Models compiled with LoRA adapter slots (mlcx.kernels.lora_layout) take three more inputs:
LORA_ROWS = "lora_slots"  # int32 [tokens]: the adapter slot of each token (0: none)
LORA_SCALES = "lora_scales"  # float32 [tokens]: the scale of each token's adapter
LORA_WEIGHTS = "lora_weights"  # the stacked A and B of every layer, after kv_pages (and states)
LORA_PARAMS = (LORA_ROWS, LORA_SCALES)

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
_SHAPES = {
    TOKENS: ("tokens",),
    **PAGE_TABLES,
    STATE_SLOTS: ("batch",),
    LOGIT_ROWS: ("num_logits",),
    IMAGE_ROWS: ("tokens",),
    IMAGE_EMBEDS: ("image_tokens", "hidden"),
    ROPE_POSITIONS: (3, "tokens"),
    LORA_ROWS: ("tokens",),
    LORA_SCALES: ("tokens",),
}
_PARAMS = {
    # logits for the rows named by logit_positions: any ragged batch of new tokens
    PREFILL: (TOKENS, *PAGE_TABLES, LOGIT_ROWS),
    # one new token per sequence, logits for every row
    DECODE: (TOKENS, *PAGE_TABLES),
    PREFILL_IMAGE: (TOKENS, *PAGE_TABLES, LOGIT_ROWS, IMAGE_ROWS, IMAGE_EMBEDS),
}


def step_params(
    function: str, states: bool = False, lora: bool = False, *, mrope: bool = False
) -> tuple[str, ...]:
    """The array parameters of `function` (prefill, decode, prefill_image), in order: for a
    model with state layers when `states` (STATE_SLOTS after the page tables), with M-RoPE when
    `mrope` (ROPE_POSITIONS after those), the LoRA rows and scales last for a model with adapter
    slots when `lora`; all int32 but IMAGE_EMBEDS and LORA_SCALES (float32)."""
    if function not in _PARAMS:
        raise ValueError(f"{function!r} is not a step function ({PREFILL} or {DECODE})")
    params = _PARAMS[function]
    extra = (STATE_SLOTS,) * states + (ROPE_POSITIONS,) * mrope
    if extra:
        after = params.index(tuple(PAGE_TABLES)[-1]) + 1
        params = (*params[:after], *extra, *params[after:])
    return (*params, *LORA_PARAMS) if lora else params


def step_function(num_tokens: int, batch_size: int, explicit_rows: bool) -> str:
    """The function that computes one step: decode when every sequence has one new token and
    the logits of every row are wanted, prefill otherwise."""
    return DECODE if num_tokens == batch_size and not explicit_rows else PREFILL


def param_shape(name: str) -> tuple[str | int, ...]:
    """The symbolic shape of a step parameter."""
    return _SHAPES[name]


def entry_inputs(
    function: str, states: bool = False, lora: bool = False, *, mrope: bool = False
) -> tuple[str, ...]:
    """Every input of an exported step function, in order, as a WebGPU plan lists them."""
    held = (KV_PAGES, STATES) if states else (KV_PAGES,)
    weights = (LORA_WEIGHTS,) if lora else ()
    return (*step_params(function, states, lora, mrope=mrope), *held, *weights, PARAMS)
