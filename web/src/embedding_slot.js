// EmbeddingSlot: one loaded embedding model of an engine (an artifact whose mlcx-config.json
// `task` is "embed"), answering WebLLM's / OpenAI's embeddings request as mlcx's Python
// Embedder and server do: texts tokenized with the tokenizer's own post-processor ([CLS] ...
// [SEP], a trailing <|endoftext|>), a text past the model's positions or an empty one refused,
// vectors unit length where the model's are, `dimensions` for Matryoshka models, `encoding_format`
// float or base64 (little-endian float32).

import { batchRows, embedBatch } from "./embedding_batch.js";
import { EngineNotLoadedError, InvalidRequestError } from "./errors.js";
import { RequestQueue } from "./request_queue.js";

const isIds = (x) => Array.isArray(x) && x.every((t) => typeof t === "number");

// request.input -> a list of inputs (strings or token lists)
function inputsOf(input) {
  if (typeof input === "string" || isIds(input)) input = [input];
  if (!Array.isArray(input) || !input.length) throw new InvalidRequestError("input must be a non-empty text, list of texts or token lists", "input");
  input.forEach((x, i) => {
    if (!(typeof x === "string" || isIds(x)) || !x.length) {
      throw new InvalidRequestError(`input[${i}] must be a non-empty string or list of token ids`, "input");
    }
  });
  return input;
}

function unit(vector) {
  const norm = Math.sqrt(vector.reduce((s, v) => s + v * v, 0));
  return vector.map((v) => v / Math.max(norm, 1e-12));
}

function base64(vector) {
  const bytes = new Uint8Array(Float32Array.from(vector).buffer);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

export class EmbeddingSlot {
  constructor(modelId, { runner, codec }) {
    Object.assign(this, { modelId, runner, codec, kind: "embed" });
    this.config = runner.config;
    this.queue = new RequestQueue();
    this.lost = null;
  }

  loaded() {
    if (this.lost) throw this.lost;
    if (!this.runner) throw new EngineNotLoadedError();
    return this.runner;
  }

  tokens(input, index) {
    const ids = typeof input === "string" ? this.codec.tokenizer.encode(input, { add_special_tokens: true }).ids : input;
    const vocab = this.config.model?.vocab_size ?? Infinity;
    if (ids.length > this.config.max_tokens) {
      throw new InvalidRequestError(`input[${index}] has ${ids.length} tokens; this model takes at most ${this.config.max_tokens} tokens per input`, "input");
    }
    if (!ids.every((t) => Number.isInteger(t) && t >= 0 && t < vocab)) {
      throw new InvalidRequestError(`input[${index}] has token ids outside [0, ${vocab})`, "input");
    }
    return ids;
  }

  dimensionsOf(dimensions) {
    if (dimensions === undefined || dimensions === null) return this.config.hidden_size;
    if (!this.config.pooling.matryoshka) {
      throw new InvalidRequestError(`this model (${this.config.model_name}) was not trained for truncated embeddings; leave dimensions out`, "dimensions");
    }
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > this.config.hidden_size) {
      throw new InvalidRequestError(`dimensions must be in [1, ${this.config.hidden_size}], not ${dimensions}`, "dimensions");
    }
    return dimensions;
  }

  async embedding(request) {
    this.loaded();
    const format = request.encoding_format ?? "float";
    if (!["float", "base64"].includes(format)) throw new InvalidRequestError(`encoding_format must be float or base64, not ${JSON.stringify(format)}`, "encoding_format");
    const dims = this.dimensionsOf(request.dimensions);
    const prompts = inputsOf(request.input).map((x, i) => this.tokens(x, i));
    const release = await this.queue.acquire();
    const started = performance.now();
    let vectors;
    try {
      vectors = await this.embedAll(prompts, dims);
    } finally {
      release();
    }
    const seconds = (performance.now() - started) / 1000;
    const tokens = prompts.reduce((n, p) => n + p.length, 0);
    return {
      object: "list", model: this.modelId,
      data: vectors.map((v, index) => ({ object: "embedding", index, embedding: format === "base64" ? base64(v) : v })),
      usage: { prompt_tokens: tokens, total_tokens: tokens, extra: { prefill_tokens_per_s: tokens / (seconds || 1e-9) } },
    };
  }

  async embedAll(prompts, dims) {
    const runner = this.loaded();
    const hidden = this.config.hidden_size;
    const out = new Array(prompts.length);
    for (const rows of batchRows(prompts)) {
      const flat = await runner.run(embedBatch(rows.map((r) => prompts[r]), this.config.pooling.mode));
      rows.forEach((r, i) => {
        const vector = Array.from(flat.subarray(i * hidden, i * hidden + dims));
        out[r] = this.config.pooling.normalize ? unit(vector) : vector;
      });
    }
    return out;
  }

  async dispose() {
    if (!this.runner) return;
    const release = await this.queue.acquire();
    const runner = this.runner;
    this.runner = null;
    this.disposed = true;
    release();
    runner.dispose();
  }
}
