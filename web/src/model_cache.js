// WebLLM's cache queries for an artifact in the browser's Cache API: its small files under
// their manifest (artifact_files.js) and its weight shards (weights.js), each keyed by URL and
// sha256: whether all are there, and dropping them. Nothing is fetched when the manifest is
// there (the shard index is read from the cache too). Each takes WebLLM's (modelId, appConfig)
// or mlcx's (artifactUrl, {shardsUrl}).

import { prebuiltAppConfig, resolveModel } from "./app_config.js";
import { FILES_CACHE, fileKey, manifestKey, readManifest } from "./artifact_files.js";
import { CACHE, shardKey } from "./weights.js";

const INDEX = "params/index.json";
const CONFIG = "mlcx-config.json";
const CHAT_CONFIG = [CONFIG, "mlcx-tokenizer.json"]; // WebLLM's mlc-chat-config.json holds both

// (model id or URL, appConfig or {shardsUrl}) -> [artifact URL, shardsUrl]
function where(modelId, second) {
  const appConfig = second?.model_list ? second : prebuiltAppConfig;
  return [resolveModel(modelId, appConfig).url, second?.model_list ? undefined : second?.shardsUrl];
}

// -> {files: the manifest's cache keys, shards: the shards' keys}, or null with no manifest.
async function keys(artifactUrl, shardsUrl) {
  const base = new URL(artifactUrl, globalThis.location?.href);
  const files = await caches.open(FILES_CACHE);
  const manifest = await readManifest(files, base);
  if (!manifest) return null;
  const indexUrl = new URL(INDEX, base).href;
  const index = manifest[indexUrl] && (await files.match(fileKey(indexUrl, manifest[indexUrl])));
  const shards = index ? (await index.json()).shards : [];
  const folder = shardsUrl ? new URL(shardsUrl, base) : new URL("params/", base);
  return {
    // null: a file the artifact does not have (artifact_files.js absent)
    files: Object.entries(manifest).filter(([, sha256]) => sha256 !== null).map(([url, sha256]) => fileKey(url, sha256)),
    shards: shards.map((shard) => shardKey(new URL(shard.file, folder).href, shard)),
    indexFound: Boolean(index),
  };
}

export async function hasModelInCache(modelId, appConfigOrOptions = undefined) {
  const found = await keys(...where(modelId, appConfigOrOptions));
  if (!found?.indexFound) return false;
  const [files, weights] = await Promise.all([caches.open(FILES_CACHE), caches.open(CACHE)]);
  const hits = await Promise.all([...found.files.map((k) => files.match(k)), ...found.shards.map((k) => weights.match(k))]);
  return hits.every(Boolean);
}

// Drops the artifact's files, its manifest and its shards (and any half-downloaded ones).
export async function deleteModelInCache(modelId, appConfigOrOptions = undefined) {
  const [artifactUrl, shardsUrl] = where(modelId, appConfigOrOptions);
  const found = await keys(artifactUrl, shardsUrl);
  if (!found) return;
  const [files, weights] = await Promise.all([caches.open(FILES_CACHE), caches.open(CACHE)]);
  for (const key of found.shards) {
    await weights.delete(key);
    await weights.delete(`${key}&partial`);
  }
  for (const key of found.files) await files.delete(key);
  await files.delete(manifestKey(new URL(artifactUrl, globalThis.location?.href)));
}

// The cached files of the artifact whose names `pick(name, library)` accepts.
async function dropFiles(artifactUrl, pick) {
  const base = new URL(artifactUrl, globalThis.location?.href);
  const files = await caches.open(FILES_CACHE);
  const manifest = await readManifest(files, base);
  if (!manifest) return;
  const configUrl = new URL(CONFIG, base).href;
  const config = manifest[configUrl] && (await files.match(fileKey(configUrl, manifest[configUrl])));
  const library = config ? (await config.json()).library : null;
  for (const [url, sha256] of Object.entries(manifest)) {
    if (sha256 !== null && pick(url.slice(base.href.length), library)) await files.delete(fileKey(url, sha256));
  }
}

// WebLLM's chat config: mlcx-config.json and mlcx-tokenizer.json (read again at the next load).
export async function deleteChatConfigInCache(modelId, appConfigOrOptions = undefined) {
  const [artifactUrl] = where(modelId, appConfigOrOptions);
  await dropFiles(artifactUrl, (name) => CHAT_CONFIG.includes(name));
}

// WebLLM's model library: the artifact's WebGPU plan and its shaders.
export async function deleteModelWasmInCache(modelId, appConfigOrOptions = undefined) {
  const [artifactUrl] = where(modelId, appConfigOrOptions);
  await dropFiles(artifactUrl, (name, library) => name === library || name.endsWith(".wgsl"));
}

// Everything of the artifact: files, manifest, weight shards.
export async function deleteModelAllInfoInCache(modelId, appConfigOrOptions = undefined) {
  await deleteChatConfigInCache(modelId, appConfigOrOptions);
  await deleteModelWasmInCache(modelId, appConfigOrOptions);
  await deleteModelInCache(modelId, appConfigOrOptions);
}
