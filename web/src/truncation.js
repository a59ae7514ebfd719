// The distribution a sampled row draws from, as mlcx/runtime/sample/truncation.py builds it:
// temperature-scaled logits shifted so the top is 0, then top_k (float64 weights of the k best,
// ties kept), or float32 weights over the vocabulary; then top_p and min_p as thresholds on the
// weights (ties at a cutoff kept). Returns {ids (null: all), weights}, ids ascending.

const f32 = Math.fround;

function sum(values) {
  let s = 0;
  for (const v of values) s += v;
  return s;
}

// The smallest weight of the shortest most likely set holding top_p of the mass.
function topPCutoff(weights, topP) {
  const target = topP * sum(weights);
  const desc = Float64Array.from(weights).sort().reverse();
  let mass = 0;
  for (let i = 0; i < desc.length - 1; i++) {
    mass += desc[i];
    if (mass >= target) return desc[i];
  }
  return desc[desc.length - 1];
}

function keepAtLeast(ids, weights, floor) {
  const keep = [];
  for (let i = 0; i < weights.length; i++) if (weights[i] >= floor) keep.push(i);
  return { ids: keep.map((i) => (ids ? ids[i] : i)), weights: keep.map((i) => weights[i]) };
}

function kthLargest(z, k) {
  return Float32Array.from(z).sort()[z.length - k];
}

function topK(z, p) {
  const kth = kthLargest(z, p.topK);
  const ids = [];
  for (let i = 0; i < z.length; i++) if (z[i] >= kth) ids.push(i);
  const weights = ids.map((i) => Math.exp(z[i]));
  let cutoff = p.minP;
  if (p.topP < 1) cutoff = Math.max(cutoff, topPCutoff(weights, p.topP));
  return cutoff > 0 ? keepAtLeast(ids, weights, cutoff) : { ids, weights };
}

function wholeVocab(z, p) {
  const w = z.map((v) => Math.exp(v)); // a Float32Array: float32 weights, as numpy's exp
  if (p.topP < 1) return keepAtLeast(null, w, f32(Math.max(topPCutoff(w, p.topP), p.minP)));
  if (p.minP > 0) return keepAtLeast(null, w, f32(p.minP));
  return { ids: null, weights: w };
}

// `z`: Float32Array of (processed logits - their max) / temperature.
export function distribution(z, p) {
  return p.topK > 0 && p.topK < z.length ? topK(z, p) : wholeVocab(z, p);
}

// (processed logits - max) * (1 / temperature), in float32 as numpy computes it.
export function scaled(x, top, temperature) {
  const scale = f32(1 / temperature);
  const z = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) z[i] = scale === 1 ? x[i] - top : f32(x[i] - top) * scale;
  return z;
}
