// WebLLM's runtimeStatsText(): prefill and decode speeds summed over every request (and every
// forwardTokensAndSample call) since the model was loaded or resetChat() dropped them.

const perSecond = (tokens, ms) => (ms > 0 ? tokens / (ms / 1000) : 0);

export class RuntimeStats {
  prefillTokens = 0;
  prefillMs = 0;
  decodeTokens = 0;
  decodeMs = 0;

  // Each choice's generation stats (generation.js): its prefill (cached tokens are not
  // computed, so not counted) and its decode steps after the first token.
  add(choiceStats) {
    for (const s of choiceStats) {
      if (!s) continue;
      this.prefillTokens += s.promptTokens - s.cachedTokens;
      this.prefillMs += s.prefillMs;
      this.decodeTokens += Math.max(s.generated - 1, 0);
      this.decodeMs += s.decodeMs;
    }
  }

  // One forwardTokensAndSample call: `tokens` fed in `ms`, counted as prefill or decode.
  record(isPrefill, tokens, ms) {
    if (isPrefill) {
      this.prefillTokens += tokens;
      this.prefillMs += ms;
    } else {
      this.decodeTokens += tokens;
      this.decodeMs += ms;
    }
  }

  text() {
    const prefill = perSecond(this.prefillTokens, this.prefillMs).toFixed(4);
    const decode = perSecond(this.decodeTokens, this.decodeMs).toFixed(4);
    return `prefill: ${prefill} tokens/sec, decoding: ${decode} tokens/sec`;
  }
}
