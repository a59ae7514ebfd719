// A stand-in for the GPU runner and the tokenizer, for testing the engine's logic under node:
// one letter per token id, logits that favour a token computed from the last one and its
// position, and an await per step so that concurrent requests could interleave if let.

import { MLCEngine } from "../src/mlc_engine.js";
import { ModelCore } from "../src/engine.js";

export const VOCAB = 27; // id 0 is EOS, 1..26 are "a".."z"

class FakeRunner {
  constructor({ numBlocks = 16, contextWindow = 64, pageSize = 4 } = {}) {
    this.numBlocks = numBlocks;
    this.config = { model_name: "fake", page_size: pageSize, prefill_chunk: 8, context_window: contextWindow,
                    sampling: { temperature: 0.7, top_p: 0.95 }, model: { vocab_size: VOCAB } };
    this.device = { destroy: () => (this.destroyed = true), lost: new Promise(() => {}) };
    this.steps = 0;
  }

  async forward(ids, tables) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    this.steps += 1;
    const last = ids[ids.length - 1];
    const pos = tables.positions[tables.positions.length - 1];
    const data = new Float32Array(VOCAB).map((_, i) => Math.sin(i * 1.3 + pos));
    data[1 + ((last * 7 + pos) % 26)] = 5;
    return { data, vocab: VOCAB };
  }
}

export const fakeCodec = {
  eosIds: new Set([0]),
  encode: (text) => Array.from(text, (c) => 1 + ((c.charCodeAt(0) - 97 + 26 * 4) % 26)),
  decode: (ids) => ids.filter((i) => i > 0).map((i) => String.fromCharCode(96 + i)).join(""),
  piece: (id) => (id > 0 ? String.fromCharCode(96 + id) : "</s>"),
  chatPrompt(messages) {
    return this.encode(messages.map((m) => `${m.role}${m.content}`).join("") + "assistant");
  },
};

export function fakeEngine(options) {
  const engine = new MLCEngine();
  engine.core = new ModelCore(new FakeRunner(options), fakeCodec);
  engine.modelId = "fake";
  return engine;
}
