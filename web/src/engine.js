// One generation at a time in the tab: prefill in chunks, then decode token by token, with
// the KV cache manager deciding pages (finished turns stay cached, so the next chat turn only
// computes its new tokens) and text streamed as it becomes printable.

import { KVCacheManager } from "./kv_cache.js";
import { makeRng, sample } from "./sampler.js";

export class Engine {
  constructor(runner, codec) {
    this.runner = runner;
    this.codec = codec;
    this.kv = new KVCacheManager(runner.numBlocks, runner.config.page_size);
    this.chunk = runner.config.prefill_chunk;
    this.nextId = 0;
  }

  // Yields {token, text, done, stats}; `text` is the printable delta.
  // ignoreEos: run maxTokens steps whatever is sampled (benchmarks).
  async *generate(promptIds, { maxTokens = 128, temperature = 0, topP = 1, seed = null, ignoreEos = false } = {}) {
    const id = this.nextId++;
    const rng = makeRng(seed);
    const started = performance.now();
    const cached = this.kv.addSequence(id, promptIds);
    try {
      let logits = null;
      for (let start = cached; start < promptIds.length; start += this.chunk) {
        logits = await this.step(id, promptIds.slice(start, start + this.chunk));
      }
      const prefillMs = performance.now() - started;
      const output = [];
      let printed = "";
      const decodeStart = performance.now();
      for (let i = 0; i < maxTokens; i++) {
        const token = sample(logits, { temperature, topP }, rng);
        output.push(token);
        const done = (!ignoreEos && this.codec.eosIds.has(token)) || i + 1 === maxTokens;
        const text = this.codec.decode(output);
        const delta = text.endsWith("\uFFFD") && !done ? "" : text.slice(printed.length);
        printed += delta;
        const decodeMs = performance.now() - decodeStart; // i decode steps so far
        const stats = { promptTokens: promptIds.length, cachedTokens: cached, prefillMs,
                        generated: output.length, decodeMs,
                        tokPerS: i > 0 ? (i * 1000) / decodeMs : 0 };
        yield { token, text: delta, done, stats };
        if (done) break;
        logits = await this.step(id, [token]);
      }
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
