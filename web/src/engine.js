// The model side of one engine: prefill in chunks, then decode token by token, with the KV
// cache manager deciding pages (a prompt that starts with a finished conversation only
// computes its new tokens). One sequence at a time; every way out frees its pages.

import { KVCacheManager } from "./kv_cache.js";

export class ModelCore {
  constructor(runner, codec) {
    this.runner = runner;
    this.codec = codec;
    this.pageSize = runner.config.page_size;
    this.chunk = runner.config.prefill_chunk;
    this.window = Math.min(runner.config.context_window, runner.numBlocks * this.pageSize);
    this.nextId = 0;
    this.resetCache();
  }

  // Drops every cached prefix (a fresh page pool).
  resetCache() {
    this.kv = new KVCacheManager(this.runner.numBlocks, this.pageSize);
  }

  // Yields {logits, cached, prefillMs} once after the prompt, then {logits} after each token
  // `next(token)` is handed; the caller breaks out when done, which frees the pages.
  async *run(promptIds) {
    const id = this.nextId++;
    const started = performance.now();
    const cached = this.kv.addSequence(id, promptIds);
    try {
      let logits = null;
      for (let start = cached; start < promptIds.length; start += this.chunk) {
        logits = await this.step(id, promptIds.slice(start, start + this.chunk));
      }
      let token = yield { logits, cached, prefillMs: performance.now() - started };
      for (;;) token = yield { logits: await this.step(id, [token]) };
    } finally {
      this.kv.free(id);
    }
  }

  // Logits of the last token, through decode for a single token as the Python engine does.
  async step(id, tokens) {
    const copies = this.kv.append(id, tokens);
    const tables = this.kv.buildArrays([[id, tokens.length]]);
    const out = await this.runner.forward(Int32Array.from(tokens), tables, copies);
    this.kv.commit(id);
    return out.data.subarray(out.data.length - out.vocab);
  }
}
