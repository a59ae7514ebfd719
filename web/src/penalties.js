// What a row's own parameters do to its logits before temperature, as
// mlcx/runtime/sample/penalties.py does it and in float32 as numpy rounds it: logit_bias, then
// the repetition penalty (prompt and output tokens; positive logits divided, negative
// multiplied), then presence/frequency penalties (output tokens only).

export function penalized(p) {
  return Object.keys(p.logitBias).length > 0 || p.repetitionPenalty !== 1
    || p.presencePenalty !== 0 || p.frequencyPenalty !== 0;
}

// `row`: a Float32Array, edited in place; `history`: the sequence's TokenHistory.
export function applyPenalties(row, p, history) {
  for (const [id, bias] of Object.entries(p.logitBias)) row[id] = row[id] + bias;
  if (p.repetitionPenalty !== 1) {
    const r = Math.fround(p.repetitionPenalty);
    for (const id of history.seen()) row[id] = row[id] < 0 ? row[id] * r : row[id] / r;
  }
  if (p.presencePenalty || p.frequencyPenalty) {
    for (const [id, n] of history.counts) row[id] = row[id] - (n * p.frequencyPenalty + p.presencePenalty);
  }
}

// The prompt and output ids the penalties look at.
export class TokenHistory {
  constructor(promptIds) {
    this.prompt = new Set(promptIds);
    this.counts = new Map();
  }

  append(token) {
    this.counts.set(token, (this.counts.get(token) ?? 0) + 1);
  }

  seen() {
    return new Set([...this.prompt, ...this.counts.keys()]);
  }
}
