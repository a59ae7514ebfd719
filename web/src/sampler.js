// Token sampling, ported from mlcx/runtime/sample/sampler.py: greedy argmax (ties to the lowest id)
// when temperature is 0, otherwise temperature -> top_p (the shortest most likely set holding
// top_p of the mass, ties at the cutoff kept) -> one draw.

export function argmax(logits) {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

// A small seedable generator (mulberry32) so a seed reproduces a reply.
export function makeRng(seed) {
  if (seed === undefined || seed === null) return Math.random;
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sample(logits, { temperature = 0, topP = 1 } = {}, rng = Math.random) {
  if (!(temperature > 0)) return argmax(logits);
  const top = logits[argmax(logits)];
  const weights = Float64Array.from(logits, (x) => Math.exp((x - top) / temperature));
  let ids = Array.from(weights.keys());
  if (topP < 1) {
    ids.sort((a, b) => weights[b] - weights[a]);
    const target = topP * weights.reduce((a, b) => a + b, 0);
    let mass = 0;
    let keep = 0;
    while (keep < ids.length && mass < target) mass += weights[ids[keep++]];
    const cutoff = weights[ids[keep - 1]];
    ids = ids.filter((i) => weights[i] >= cutoff);
  }
  const total = ids.reduce((s, i) => s + weights[i], 0);
  let u = rng() * total;
  for (const i of ids) {
    u -= weights[i];
    if (u < 0) return i;
  }
  return ids.at(-1);
}
