// The model side of one engine: prefill in chunks, then decode token by token, with the KV
// cache manager deciding pages (a prompt that starts with a finished conversation only
// computes its new tokens). One sequence at a time; every way out frees its pages.
// A prompt's images (vision.js promptImages) follow mlcx/runtime/core/images.py: a chunk never
// cuts an image, image tokens are keyed in the prefix cache by their image's content, their
// embeddings replaced by the image's rows, and (Gemma 3) each sees its whole image.

import { KVCacheManager } from "./kv_cache.js";
import { tokenPositions } from "./rope_positions.js";
import { SequenceStates } from "./state_cache.js";
import { takesRopePositions } from "./step.js";

export class ModelCore {
  constructor(runner, codec, vision = null) {
    this.runner = runner;
    this.codec = codec;
    this.vision = vision;
    this.pageSize = runner.config.page_size;
    this.chunk = runner.config.prefill_chunk;
    this.window = Math.min(runner.config.context_window, runner.numBlocks * this.pageSize);
    this.nextId = 0;
    // a hybrid model's state slots and saved states (state_cache.js)
    this.states = runner.states?.length ? new SequenceStates(runner, this.pageSize) : null;
    // M-RoPE (Qwen-VL): every step's positions follow its sequence's images
    this.mrope = Boolean(runner.plan?.functions?.prefill) && takesRopePositions(runner.plan);
    this.seqImages = new Map(); // sequence id -> its prompt's images
    this.resetCache();
  }

  // Drops every cached prefix (a fresh page pool, no saved state).
  resetCache() {
    this.kv = new KVCacheManager(this.runner.numBlocks, this.pageSize);
    this.states?.clear();
  }

  // Yields {logits, cached, prefillMs} once after the prompt, then {logits} after each token
  // `next(token)` is handed; the caller breaks out when done, which frees the pages.
  async *run(promptIds, images = []) {
    const id = this.nextId++;
    const started = performance.now();
    const keys = cacheKeys(promptIds, images);
    let cached = this.kv.addSequence(id, keys);
    this.seqImages.set(id, images);
    try {
      if (this.states) cached = this.states.begin(this.kv, id, keys, cached);
      let logits = null;
      for (let start = cached; start < promptIds.length; ) {
        let end = chunkEnd(images, start, Math.min(start + this.chunk, promptIds.length));
        if (this.states) end = this.states.chunkEnd(start, end);
        if (end === start) throw new Error(`an image's tokens exceed a step's ${this.chunk}; recompile with a larger --prefill-chunk`);
        logits = await this.step(id, promptIds.slice(start, end), keys.slice(start, end), imagesIn(images, start, end));
        start = end;
      }
      let token = yield { logits, cached, prefillMs: performance.now() - started };
      for (;;) token = yield { logits: await this.step(id, [token]) };
    } finally {
      this.kv.free(id);
      this.seqImages.delete(id);
    }
  }

  // A sequence kept open across calls (forwardTokensAndSample): each `extend` appends tokens to
  // its KV pages and returns the last token's logits; `close` frees them.
  open() {
    const id = this.nextId++;
    this.kv.addSequence(id, []);
    return id;
  }

  async extend(id, tokens) {
    let logits = null;
    for (let start = 0; start < tokens.length; start += this.chunk) {
      logits = await this.step(id, tokens.slice(start, start + this.chunk));
    }
    return logits;
  }

  close(id) {
    if (this.kv.seqs.has(id)) this.kv.free(id);
  }

  // Logits of the last token, through decode for a single token as the Python engine does.
  async step(id, tokens, keys = tokens, images = null) {
    const first = this.kv.seqs.get(id).tokens.length;
    const copies = this.kv.append(id, keys);
    let tables, rows = null, image = null;
    if (images) {
      const spans = this.vision.config.bidirectional ? { [id]: images.map((i) => [i.start, i.end]) } : {};
      tables = this.kv.buildArrays([[id, tokens.length]], spans);
      image = stepImage(images, first, tokens.length);
      rows = Int32Array.of(tokens.length - 1); // rows are split per image token: name the last
    } else {
      tables = this.kv.buildArrays([[id, tokens.length]]);
    }
    const slots = this.states?.slots ?? null;
    const positions = this.mrope ? tokenPositions(first, tokens.length, this.seqImages.get(id) ?? []) : null;
    const out = await this.runner.forward(Int32Array.from(tokens), tables, copies, rows, image, slots, positions);
    this.kv.commit(id);
    this.states?.committed(this.kv, id);
    return out.data.subarray(out.data.length - out.vocab);
  }
}

// The ids the prefix cache hashes: image tokens replaced by their image's cache id.
function cacheKeys(ids, images) {
  const keys = [...ids];
  for (const image of images) keys.fill(image.cacheId, image.start, image.end);
  return keys;
}

// The end of a chunk from `start` to at most `end` that cuts no image (images.py chunk_tokens).
function chunkEnd(images, start, end) {
  for (const image of images) if (image.start < end && end < image.end) return Math.max(image.start, start);
  return end;
}

// The images a step over [start, end) computes tokens of, or null.
function imagesIn(images, start, end) {
  const found = images.filter((i) => i.start < end && start < i.end);
  return found.length ? found : null;
}

// {rows: each new token's row of embeds (-1: its own), embeds} for a step from `first`.
function stepImage(images, first, count) {
  const rows = new Int32Array(count).fill(-1);
  const pieces = [];
  let offset = 0;
  const hidden = images[0].rows.length / (images[0].end - images[0].start);
  for (const image of images) {
    const lo = Math.max(image.start, first);
    const hi = Math.min(image.end, first + count);
    for (let p = lo; p < hi; p++) rows[p - first] = offset + p - lo;
    pieces.push(image.rows.subarray((lo - image.start) * hidden, (hi - image.start) * hidden));
    offset += hi - lo;
  }
  const embeds = new Float32Array(offset * hidden);
  let at = 0;
  for (const piece of pieces) {
    embeds.set(piece, at);
    at += piece.length;
  }
  return { rows, embeds };
}
