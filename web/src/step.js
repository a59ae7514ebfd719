// One forward step as the plan's step functions take it. The Python definitions are
// mlcx/kernels/step_params.py (names, order, when decode runs) and mlcx/kernels/kv_layout.py
// (page shape). The input order and the page shape are read from the plan;
// tests/webgpu/test_web_step.py runs this file and kv_cache.js on the Python cases, so the
// names and the decode rule written here fail a test when they drift.

import { evaluate } from "./expr.js";
import { STATES } from "./state_cache.js";

export const KV_PAGES = "kv_pages";
export const PARAMS = "packed_params";

// decode when every sequence has one new token and every row's logits are wanted
export const stepFunction = (numTokens, batchSize, explicitRows) =>
  numTokens === batchSize && !explicitRows ? "decode" : "prefill";

// The function that computes a step, and the arrays it takes before the KV pages, by name in
// the plan's order. ids: new tokens; tables: KVCacheManager.buildArrays(...); rows: logit rows
// (null: each sequence's last new token); image: {rows: Int32Array (each token's row of
// embeds, -1: its own embedding), embeds: Float32Array [image tokens x hidden]}, which makes it
// prefill_image (image_embeds is the one float32 array); stateSlots: a hybrid model's state
// slot of each sequence (state_cache.js); ropePositions: an M-RoPE model's Int32Array
// [3 x tokens] (rope_positions.js).
export const ROPE_POSITIONS = "rope_positions";

// Whether the plan's steps take M-RoPE positions (Qwen-VL).
export const takesRopePositions = (plan) => plan.functions.prefill.inputs.some((i) => i.name === ROPE_POSITIONS);

export function stepCall(plan, ids, tables, rows = null, image = null, stateSlots = null, ropePositions = null) {
  const name = image ? "prefill_image" : stepFunction(ids.length, tables.last_page_len.length, rows !== null);
  const lastRows = () => Int32Array.from(tables.q_indptr.slice(1), (x) => x - 1);
  const known = { ...tables, input_ids: ids, logit_positions: rows ?? lastRows() };
  if (image) Object.assign(known, { image_rows: image.rows, image_embeds: image.embeds });
  if (stateSlots) known.state_slots = stateSlots;
  if (ropePositions) known[ROPE_POSITIONS] = ropePositions;
  if (!plan.functions[name]) throw new Error(`the plan has no ${name}: recompile the model with its image encoder`);
  const arrays = {};
  for (const input of plan.functions[name].inputs) {
    if (input.name === KV_PAGES || input.name === PARAMS || input.name === STATES) continue;
    if (!(input.name in known)) {
      throw new Error(`${name} takes ${input.name}, which this page does not know: recompile the model with the mlcx that serves this page`);
    }
    arrays[input.name] = known[input.name];
  }
  return { name, arrays };
}

// Shape and dtype of each layer's KV pages, as the plan's decode declares them, for numPages
// pages (the first dimension, a shape variable).
export function kvPagesTensors(plan, numPages) {
  const input = plan.functions.decode.inputs.find((i) => i.name === KV_PAGES);
  return input.fields.map(({ shape, dtype }) => ({
    shape: shape.map((d) => evaluate(d, { [shape[0]]: numPages })),
    dtype,
  }));
}
