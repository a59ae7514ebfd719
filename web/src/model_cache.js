// WebLLM's cache queries for an artifact in the browser's Cache API: its small files under
// their manifest (artifact_files.js) and its weight shards (weights.js), the image encoder's
// (vision/) as well where the artifact has one, each keyed by URL and sha256: whether all are
// there, and dropping them. Nothing is fetched when the manifest is there (the shard indexes
// are read from the cache too). Each takes WebLLM's (modelId, appConfig) or mlcx's
// (artifactUrl, {shardsUrl, visionShardsUrl}).

import { prebuiltAppConfig, resolveModel } from "./app_config.js";
import { FILES_CACHE, fileKey, manifestKey, readManifest } from "./artifact_files.js";
import { CACHE, shardKey } from "./weights.js";

const INDEX = "params/index.json";
const VISION = "vision/";
const ENCODER = "vision/encoder.json";
const CONFIG = "mlcx-config.json";
const CHAT_CONFIG = [CONFIG, "mlcx-tokenizer.json"]; // WebLLM's mlc-chat-config.json holds both

// (model id or URL, appConfig or {shardsUrl, visionShardsUrl}) -> [artifact URL, options]
function where(modelId, second) {
  const appConfig = second?.model_list ? second : prebuiltAppConfig;
  return [resolveModel(modelId, appConfig).url, second?.model_list ? {} : (second ?? {})];
}

// The shard keys of the weights whose index is at `base`/params/index.json and whose shards
// are in `shardsUrl` (default `base`/params/); null when the manifest has no such index.
async function shardKeys(files, manifest, base, shardsUrl) {
  const indexUrl = new URL(INDEX, base).href;
  if (!manifest[indexUrl]) return null;
  const index = await files.match(fileKey(indexUrl, manifest[indexUrl]));
  if (!index) return undefined; // the manifest names it, the cache lost it
  const folder = shardsUrl ? new URL(shardsUrl, base) : new URL("params/", base);
  return (await index.json()).shards.map((shard) => shardKey(new URL(shard.file, folder).href, shard));
}

// -> {files: the manifest's cache keys, shards: the text and encoder shards' keys, complete},
// or null with no manifest. An artifact without an image encoder has no vision/ index in its
// manifest (a load recorded encoder.json as absent), so it adds no shards.
async function keys(artifactUrl, { shardsUrl, visionShardsUrl } = {}) {
  const base = new URL(artifactUrl, globalThis.location?.href);
  const files = await caches.open(FILES_CACHE);
  const manifest = await readManifest(files, base);
  if (!manifest) return null;
  const text = await shardKeys(files, manifest, base, shardsUrl);
  const vision = await shardKeys(files, manifest, new URL(VISION, base), visionShardsUrl);
  return {
    // null: a file the artifact does not have (artifact_files.js absent)
    files: Object.entries(manifest).filter(([, sha256]) => sha256 !== null).map(([url, sha256]) => fileKey(url, sha256)),
    shards: [...(text ?? []), ...(vision ?? [])],
    complete: Boolean(text) && vision !== undefined,
  };
}

export async function hasModelInCache(modelId, appConfigOrOptions = undefined) {
  const found = await keys(...where(modelId, appConfigOrOptions));
  if (!found?.complete) return false;
  const [files, weights] = await Promise.all([caches.open(FILES_CACHE), caches.open(CACHE)]);
  const hits = await Promise.all([...found.files.map((k) => files.match(k)), ...found.shards.map((k) => weights.match(k))]);
  return hits.every(Boolean);
}

// Drops the artifact's files, its manifest and its shards (and any half-downloaded ones).
export async function deleteModelInCache(modelId, appConfigOrOptions = undefined) {
  const [artifactUrl, options] = where(modelId, appConfigOrOptions);
  const found = await keys(artifactUrl, options);
  if (!found) return;
  const [files, weights] = await Promise.all([caches.open(FILES_CACHE), caches.open(CACHE)]);
  for (const key of found.shards) {
    await weights.delete(key);
    await weights.delete(`${key}&partial`);
  }
  for (const key of found.files) await files.delete(key);
  await files.delete(manifestKey(new URL(artifactUrl, globalThis.location?.href)));
}

// The `library` field of the cached JSON file `name` (a config), or null.
async function libraryOf(files, manifest, base, name) {
  const url = new URL(name, base).href;
  const config = manifest[url] && (await files.match(fileKey(url, manifest[url])));
  return config ? (await config.json()).library : null;
}

// The cached files of the artifact whose names `pick(name, libraries)` accepts; libraries: the
// text plan's and the image encoder's (vision/...) file names.
async function dropFiles(artifactUrl, pick) {
  const base = new URL(artifactUrl, globalThis.location?.href);
  const files = await caches.open(FILES_CACHE);
  const manifest = await readManifest(files, base);
  if (!manifest) return;
  const encoder = await libraryOf(files, manifest, base, ENCODER);
  const libraries = [await libraryOf(files, manifest, base, CONFIG), encoder && VISION + encoder];
  for (const [url, sha256] of Object.entries(manifest)) {
    if (sha256 !== null && pick(url.slice(base.href.length), libraries)) await files.delete(fileKey(url, sha256));
  }
}

// WebLLM's chat config: mlcx-config.json and mlcx-tokenizer.json (read again at the next load).
export async function deleteChatConfigInCache(modelId, appConfigOrOptions = undefined) {
  const [artifactUrl] = where(modelId, appConfigOrOptions);
  await dropFiles(artifactUrl, (name) => CHAT_CONFIG.includes(name));
}

// WebLLM's model library: the artifact's WebGPU plans (text and image encoder) and their shaders.
export async function deleteModelWasmInCache(modelId, appConfigOrOptions = undefined) {
  const [artifactUrl] = where(modelId, appConfigOrOptions);
  await dropFiles(artifactUrl, (name, libraries) => libraries.includes(name) || name.endsWith(".wgsl"));
}

// Everything of the artifact: files, manifest, weight shards.
export async function deleteModelAllInfoInCache(modelId, appConfigOrOptions = undefined) {
  await deleteChatConfigInCache(modelId, appConfigOrOptions);
  await deleteModelWasmInCache(modelId, appConfigOrOptions);
  await deleteModelInCache(modelId, appConfigOrOptions);
}
