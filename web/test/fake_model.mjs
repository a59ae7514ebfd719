// A stand-in for the GPU runner and the tokenizer, for testing the engine's logic under node:
// one letter per token id, logits that favour a token computed from the last one and its
// position, and an await per step so that concurrent requests could interleave if let.

import { CreateMLCEngine } from "../src/page_engine.js";

export const VOCAB = 27; // id 0 is EOS, 1..26 are "a".."z"

class FakeRunner {
  constructor({ numBlocks = 16, contextWindow = 64, pageSize = 4 } = {}) {
    this.numBlocks = numBlocks;
    this.config = { model_name: "fake", page_size: pageSize, prefill_chunk: 8, context_window: contextWindow,
                    sampling: { temperature: 0.7, top_p: 0.95 }, model: { vocab_size: VOCAB } };
    let lose;
    const lost = new Promise((resolve) => (lose = resolve));
    // lose(info): as a driver reset would
    this.device = { lost, lose };
    this.steps = 0;
  }

  dispose() {
    this.disposed = true;
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

// An engine that loads `runner` and `codec` through its own reload (appConfig id -> URL ->
// the loader, here a stand-in), under `modelId`.
export function engineWith(modelId, runner, codec, engineConfig = {}) {
  const appConfig = { model_list: [{ model: `http://models.test/${modelId}/`, model_id: modelId }] };
  const loadModel = async (url, options) => {
    options.initProgressCallback?.({ progress: 1, timeElapsed: 0, text: `loaded ${url}` });
    return { runner, codec, vision: null, task: "generate" };
  };
  return CreateMLCEngine(modelId, { appConfig, loadModel, ...engineConfig });
}

export function fakeEngine(options, engineConfig = {}) {
  return engineWith("fake", new FakeRunner(options), fakeCodec, engineConfig);
}

// A model that answers `pieces` in order, then EOS: token 0 is EOS, 1..n the pieces, n + 1
// every prompt character.
class ScriptedRunner extends FakeRunner {
  constructor(n) {
    super();
    this.n = n;
    this.config.model.vocab_size = n + 2;
  }

  async forward(ids) {
    const last = ids[ids.length - 1];
    const next = last === this.n + 1 ? 1 : last < this.n ? last + 1 : 0;
    const data = new Float32Array(this.n + 2);
    data[next] = 10;
    return { data, vocab: this.n + 2 };
  }
}

export function scriptedEngine(pieces, meta = {}) {
  const codec = {
    meta, // the tokenizer's: its chat_template tells the tool-call syntax (call_syntax.js)
    eosIds: new Set([0]),
    encode: (text) => Array.from(text, () => pieces.length + 1),
    decode: (ids) => ids.map((i) => pieces[i - 1] ?? "").join(""),
    piece: (id) => pieces[id - 1] ?? "",
    chatPrompt(messages, tools) {
      this.tools = tools;
      return this.encode(messages.map((m) => m.content).join(""));
    },
  };
  return engineWith("scripted", new ScriptedRunner(pieces.length), codec);
}
