// App mode (?app=mlcx-app.json&model=ID), what the iOS and Android shells load: picks the
// model's variant this GPU can run, sizes the KV cache from the model's memory budget and
// says where the weights are, the image encoder's too where the model has one (the app's
// bundle/ folder, or a download URL). The app config is
// dist/www/mlcx-app.json, written by `mlcx package --app` (mlcx/package/www.py).

import { chooseVariant, kvBlocksForBudget } from "./device_fit.js";
import { requestAdapter } from "./gpu.js";

export async function appModel(appUrl, modelId) {
  const app = await (await fetch(appUrl)).json();
  const model = modelId ? app.models.find((m) => m.id === modelId) : app.models[0];
  if (!model) {
    throw new Error(`this app has no model ${modelId}; it has ${app.models.map((m) => m.id).join(", ")}`);
  }
  const adapter = await requestAdapter();
  const { variant, fallbackFrom } = chooseVariant(model.variants, adapter.features);
  const blocks = (plan, config) => kvBlocksForBudget({
    budget: model.estimated_memory_bytes,
    weightBytes: variant.weights_bytes + (variant.vision_weights_bytes ?? 0),
    blockBytes: config.kv_block_bytes,  // derived once, by mlcx (ArtifactConfig.kv_block_bytes)
    contextWindow: config.context_window,
    pageSize: config.page_size,
    deviceMemoryBytes: navigator.deviceMemory ? navigator.deviceMemory * 2 ** 30 : null,
  });
  const lacks = fallbackFrom?.features.filter((f) => !adapter.features.has(f)) ?? [];
  const note = fallbackFrom ? `this GPU lacks ${lacks.join(", ")}: running the ${variant.quantization} variant` : null;
  const visionShardsUrl = variant.vision_weights ? new URL(variant.vision_weights, appUrl) : undefined;
  return { model, variant, note, blocks, base: new URL(variant.artifact, appUrl),
           shardsUrl: new URL(variant.weights, appUrl), visionShardsUrl };
}
