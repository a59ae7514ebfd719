// What a phone can run, decided without touching the GPU (node-tested in web/test/):
// which variant of a model the adapter's features allow, and how many KV cache pages fit in
// the model's memory budget once its weights are loaded.

export class DeviceUnfit extends Error {}

// variants: preferred first, each {quantization, features}; adapterFeatures: a Set of names.
// Returns {variant, fallbackFrom} (fallbackFrom: the preferred variant that could not run).
export function chooseVariant(variants, adapterFeatures) {
  const runnable = variants.find((v) => v.features.every((f) => adapterFeatures.has(f)));
  if (runnable) return { variant: runnable, fallbackFrom: runnable === variants[0] ? null : variants[0] };
  const missing = [...new Set(variants.flatMap((v) => v.features.filter((f) => !adapterFeatures.has(f))))];
  throw new DeviceUnfit(
    `This device's GPU lacks the WebGPU feature ${missing.join(", ")} that every variant of ` +
      `this model needs (${variants.map((v) => v.quantization).join(", ")}). Package an f32 ` +
      'variant too: "fallback_quantization": "q4f32" in package.json.');
}

// KV pages for the memory budget: one full context window when it fits, fewer when the
// budget (capped at half the device's memory when the browser tells it) is short.
export function kvBlocksForBudget({ budget, weightBytes, blockBytes, contextWindow, pageSize,
                                    deviceMemoryBytes = null }) {
  const cap = deviceMemoryBytes ? Math.min(budget, deviceMemoryBytes / 2) : budget;
  const full = Math.ceil(contextWindow / pageSize);
  const fit = Math.floor((cap - weightBytes) / blockBytes);
  if (fit < 1) {
    const mb = (n) => Math.round(n / 2 ** 20);
    throw new DeviceUnfit(
      `The model's weights (${mb(weightBytes)} MB) leave no room for a KV cache in its memory ` +
        `budget of ${mb(cap)} MB; raise estimated_memory_bytes or package a smaller model.`);
  }
  return Math.min(full, fit);
}
