// WebLLM's model ids: an appConfig's `model_list` maps each `model_id` to an artifact URL
// (`model`), as WebLLM code writes it, so a WebLLM page changes only its import. A Hugging Face
// repository URL gets WebLLM's `resolve/main/`; any other URL is the artifact's folder, relative
// ones against the page. An id that is in no record but is itself a URL or path (mlcx-web's own
// form, `CreateMLCEngine("/artifact/")`) loads that artifact under its URL as its id.

import { EngineNotLoadedError, ModelNotFoundError, SpecifiedModelNotFoundError, UnclearModelToUseError } from "./errors.js";
import { prebuiltAppConfig } from "./prebuilt_app_config.js";

export { prebuiltAppConfig };

// Kept for code that builds WebLLM `model_lib` URLs from them; mlcx-web ignores `model_lib`
// (an artifact's WebGPU plan sits in its folder).
export const modelVersion = "mlcx-web";
export const modelLibURLPrefix = "";

// WebLLM's ModelType: a record's `model_type`.
export const ModelType = { LLM: 0, embedding: 1, VLM: 2 };

const HUB = /^https?:\/\/huggingface\.co\//;

const pageUrl = () => globalThis.location?.href;

// A record's `model` as the artifact's folder URL.
export function artifactUrlOf(model, base = pageUrl()) {
  let url = String(model);
  url += url.endsWith("/") ? "" : "/";
  if (HUB.test(url) && !/\/resolve\/[^/]+\//.test(url)) url += "resolve/main/";
  return new URL(url, base).href;
}

export function findModelRecord(modelId, appConfig = prebuiltAppConfig) {
  const list = appConfig?.model_list ?? [];
  const record = list.find((r) => r.model_id === modelId);
  if (record) return record;
  throw new ModelNotFoundError(modelId, list.map((r) => r.model_id));
}

const isUrlLike = (id) => id instanceof URL || (typeof id === "string" && /[/:]/.test(id));

// -> {modelId, url, record (null for a URL given directly)}
export function resolveModel(modelId, appConfig = prebuiltAppConfig, base = pageUrl()) {
  const known = (appConfig?.model_list ?? []).find((r) => r.model_id === modelId);
  if (known) return { modelId, url: artifactUrlOf(known.model, base), record: known };
  if (isUrlLike(modelId)) return { modelId: String(modelId), url: new URL(modelId, base).href, record: null };
  return { modelId, url: null, record: findModelRecord(modelId, appConfig) }; // throws
}

// A copy whose records' `model` URLs are absolute (resolved against this page), for a worker
// whose own location (a blob: URL, the worker script's) must not change what they name.
export function absoluteAppConfig(appConfig, base = pageUrl()) {
  if (!appConfig) return appConfig;
  return { ...appConfig, model_list: (appConfig.model_list ?? []).map((r) => ({ ...r, model: artifactUrlOf(r.model, base) })) };
}

// An id as a worker must receive it: a URL or path given as an id made absolute here.
export function portableModelId(id, appConfig = prebuiltAppConfig, base = pageUrl()) {
  if ((appConfig?.model_list ?? []).some((r) => r.model_id === id)) return id;
  return isUrlLike(id) ? new URL(id, base).href : id;
}

// Which loaded model a request is for (WebLLM's getModelIdToUse), or the error saying why none.
export function modelIdToUse(loaded, requested, requestName) {
  if (!loaded.length) throw new EngineNotLoadedError();
  if (requested) {
    if (!loaded.includes(requested)) throw new SpecifiedModelNotFoundError(loaded, requested, requestName);
    return requested;
  }
  if (loaded.length > 1) throw new UnclearModelToUseError(loaded, requestName);
  return loaded[0];
}

// WebLLM's list of models that may take `tools`: with mlcx every generative model may (its chat
// template renders them, or the generic tool prompt does).
export const functionCallingModelIds = prebuiltAppConfig.model_list
  .filter((r) => (r.model_type ?? ModelType.LLM) !== ModelType.embedding).map((r) => r.model_id);
