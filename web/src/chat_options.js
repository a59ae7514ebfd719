// WebLLM's chatOpts (reload's second argument) and a record's `overrides`: fields of the
// model's chat config. Those an artifact leaves open are honoured: the sampling defaults (a
// request's own fields win) and a smaller context window; the rest (conversation template,
// tokenizer files, sliding window) are fixed when the artifact is compiled and are ignored with a
// warning, as WebLLM ignores fields it does not know.

import { InvalidRequestError } from "./errors.js";
import { log } from "./log.js";

export const SAMPLING_OPTIONS = ["temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                 "presence_penalty", "frequency_penalty"];
const WINDOW = "context_window_size";

// (record overrides, chatOpts) -> {sampling: {field: default}, contextWindow: number | null}
export function chatOptions(overrides = {}, chatOpts = {}) {
  const merged = { ...(overrides ?? {}), ...(chatOpts ?? {}) };
  const sampling = {};
  let contextWindow = null;
  for (const [key, value] of Object.entries(merged)) {
    if (value === undefined || value === null) continue;
    if (SAMPLING_OPTIONS.includes(key)) sampling[key] = value;
    else if (key === WINDOW) contextWindow = positive(value);
    else log.warn(`chat option ${key} is fixed by the compiled artifact; ignored`);
  }
  return { sampling, contextWindow };
}

function positive(value) {
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidRequestError(`${WINDOW} must be a positive integer, got ${JSON.stringify(value)}`, WINDOW);
  }
  return value;
}

// The request with each sampling field it leaves out taken from the chat options.
export function withOptionDefaults(request, sampling) {
  const filled = { ...request };
  for (const [key, value] of Object.entries(sampling)) {
    if (filled[key] === undefined || filled[key] === null) filled[key] = value;
  }
  return filled;
}
