// One token per step, as mlcx/runtime/sample/sampler.py picks it: logit_bias and penalties,
// then greedy argmax (ties to the lowest id) at temperature 0, otherwise temperature -> top_k
// -> top_p -> min_p -> one inverse-CDF draw from the choice's own PCG64 (seed + choice index).
// Logprobs are the log-softmax of the logits after bias and penalties, before temperature.

import { makeRng } from "./pcg64.js";
import { TokenHistory, applyPenalties, penalized } from "./penalties.js";
import { distribution, scaled } from "./truncation.js";

const DRAW_BLOCK = 256;

export function argmax(logits) {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

// First index whose cumulative weight exceeds u; never a zero weight.
function firstAbove(cum, u, weights) {
  const j = cum.findIndex((c) => c > u);
  if (j >= 0) return j;
  for (let i = weights.length - 1; i >= 0; i--) if (weights[i] > 0) return i;
  return weights.length - 1;
}

// Two levels, blocks then one block, summed in the order the Python draw sums them.
export function draw({ ids, weights }, rng) {
  const blockMass = [];
  for (let s = 0; s < weights.length; s += DRAW_BLOCK) {
    let m = 0;
    for (let i = s; i < Math.min(s + DRAW_BLOCK, weights.length); i++) m += weights[i];
    blockMass.push(m);
  }
  let acc = 0;
  const blockCum = blockMass.map((m) => (acc += m));
  const u = rng() * blockCum.at(-1);
  const b = firstAbove(blockCum, u, blockMass);
  const block = Array.from(weights.slice(b * DRAW_BLOCK, (b + 1) * DRAW_BLOCK));
  const before = b ? blockCum[b - 1] : 0;
  let run = 0;
  const cum = block.map((w) => before + (run += w));
  const j = b * DRAW_BLOCK + firstAbove(cum, u, block);
  return ids ? ids[j] : j;
}

function logSumExp(x, top) {
  let s = 0;
  for (const v of x) s += Math.fround(Math.exp(Math.fround(v - top)));
  return top + Math.log(s);
}

function topLogprobs(x, lse, k) {
  const ids = Array.from(x.keys()).filter((i) => x[i] > -Infinity);
  ids.sort((a, b) => x[b] - x[a] || a - b);
  return ids.slice(0, k).map((i) => ({ id: i, logprob: x[i] - lse }));
}

function checkFinite(value) {
  if (!Number.isFinite(value)) {
    throw new RangeError("logits must be free of NaN and +inf and keep a finite value after logit_bias and penalties");
  }
}

// The sampling state of one generated sequence: its generator and the ids penalties look at.
export class TokenSampler {
  constructor(params, promptIds = [], choiceIndex = 0) {
    this.params = params;
    this.rng = makeRng(params.seed === null || params.seed === undefined ? null : params.seed + choiceIndex);
    this.history = new TokenHistory(promptIds);
  }

  // -> {token, logprob, top} (logprob and top null unless params.logprobs).
  sample(logits) {
    const p = this.params;
    const x = Float32Array.from(logits);
    if (penalized(p)) applyPenalties(x, p, this.history);
    const top = x[argmax(x)];
    checkFinite(top);
    const token = p.temperature === 0 ? argmax(x) : draw(distribution(scaled(x, top, p.temperature), p), this.rng);
    this.history.append(token);
    if (!p.logprobs) return { token, logprob: null, top: null };
    const lse = logSumExp(x, top);
    return { token, logprob: x[token] - lse, top: p.topLogprobs ? topLogprobs(x, lse, p.topLogprobs) : null };
  }
}
