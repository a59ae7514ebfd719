// WebLLM's forwardTokensAndSample: one sequence the caller feeds token ids (a prompt, then each
// sampled token), kept in the KV cache between calls until resetChat or the next request,
// sampled with the model's defaults (and chat options) and a LogitProcessor where one is set.

import { ContextWindowSizeExceededError, InvalidRequestError } from "./errors.js";
import { TokenSampler } from "./sampler.js";

export class RawSequence {
  constructor(core, params) {
    this.core = core;
    this.seq = core.open();
    this.sampler = new TokenSampler(params, []);
    this.length = 0;
  }

  async next(inputIds, processor = null) {
    const vocab = this.core.runner.config.model?.vocab_size ?? Infinity;
    if (!Array.isArray(inputIds) || !inputIds.length || !inputIds.every((id) => Number.isInteger(id) && id >= 0 && id < vocab)) {
      throw new InvalidRequestError(`inputIds must be a non-empty list of token ids in [0, ${vocab})`, "inputIds");
    }
    if (this.length + inputIds.length >= this.core.window) {
      throw new ContextWindowSizeExceededError(`the sequence would hold ${this.length + inputIds.length} tokens but ` +
        `the context window is ${this.core.window}; call resetChat() to start a new one`);
    }
    const logits = await this.core.extend(this.seq, inputIds);
    this.length += inputIds.length;
    const x = processor ? processor.processLogits(Float32Array.from(logits)) : logits;
    const { token } = this.sampler.sample(x);
    processor?.processSampledToken(token);
    return token;
  }

  close() {
    this.core.close(this.seq);
  }
}
