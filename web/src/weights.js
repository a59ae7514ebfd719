// Weight shards (params/index.json + raw little-endian shard files, see
// mlcx/artifact/weight_shards.py) downloaded once with progress and resume (download.js),
// kept in the browser's Cache API, checked against their sha256 and uploaded tensor by tensor.
// The index sits with the plan; the shards may live elsewhere (an app's bundle/ folder or a
// download URL), given as shardsUrl.

import { download } from "./download.js";
import { IntegrityError } from "./errors.js";
import { createBuffer } from "./gpu.js";

export const CACHE = "mlcx-weights-v1";

// A shard's cache key: its URL and content hash, so a changed shard is never taken for the old.
export const shardKey = (url, shard) => `${url}?sha256=${shard.sha256}`;

// Where an artifact's weights are: its shard index, and the shards' folder.
export async function shardIndex(baseUrl, shardsUrl = new URL("params/", baseUrl), fetchFn = fetch) {
  const index = await (await fetchFn(new URL("params/index.json", baseUrl))).json();
  return { index, urls: index.shards.map((shard) => new URL(shard.file, shardsUrl).href) };
}

export async function sha256Hex(data) {
  const digest = await crypto.subtle.digest("SHA-256", data);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// An interrupted download's bytes are cached under their own key until the next attempt.
async function fetchShard(cache, url, key, expectedBytes, onBytes, fetchFn) {
  const partialKey = `${key}&partial`;
  const stored = await cache?.match(partialKey);
  const partial = stored ? new Uint8Array(await stored.arrayBuffer()) : null;
  if (partial) onBytes(partial.byteLength);
  try {
    const data = await download(url, { partial, expectedBytes, onBytes, fetchFn });
    await cache?.delete(partialKey);
    return data;
  } catch (err) {
    if (err.partial?.byteLength) await cache?.put(partialKey, new Response(err.partial));
    throw err;
  }
}

async function cachedShard(url, shard, onBytes, fetchFn) {
  const key = shardKey(url, shard);
  const cache = "caches" in self ? await caches.open(CACHE) : null;
  const hit = await cache?.match(key);
  const data = hit
    ? new Uint8Array(await hit.arrayBuffer())
    : await fetchShard(cache, url, key, shard.nbytes, onBytes, fetchFn);
  if (hit) onBytes(data.byteLength, true);
  const actual = await sha256Hex(data);
  if (actual !== shard.sha256) {
    await cache?.delete(key);
    throw Object.assign(new IntegrityError(url, `sha256 ${shard.sha256}`, `sha256 ${actual}`), {
      message: `${shard.file} does not match its sha256 (a damaged download or stale files); ` +
        "it was dropped from the cache, reload to fetch it again" });
  }
  if (!hit) await cache?.put(key, new Response(data)).catch((err) => console.warn(
    `mlcx: ${shard.file} is kept in memory only, the browser cache refused it (${err.name}: ` +
    `${err.message}); the next load downloads it again`));
  return { data, hit: Boolean(hit) };
}

// Returns the tensors in index order as {buffer, shape, dtype}; onProgress(done, total, cached).
export async function loadWeights(device, baseUrl, onProgress, shardsUrl = new URL("params/", baseUrl), fetchFn = fetch) {
  const { index, urls } = await shardIndex(baseUrl, shardsUrl, fetchFn);
  const total = index.shards.reduce((s, shard) => s + shard.nbytes, 0);
  let done = 0;
  let cached = true;
  const tensors = [];
  for (const [i, shard] of index.shards.entries()) {
    const { data, hit } = await cachedShard(urls[i], shard, (n, fromCache = false) => {
      done += n;
      onProgress?.(done, total, cached && fromCache);
    }, fetchFn);
    cached &&= hit;
    for (const t of index.tensors.filter((t) => t.shard === i)) {
      const buffer = createBuffer(device, t.nbytes);
      const bytes = new Uint8Array(Math.ceil(t.nbytes / 4) * 4);
      bytes.set(data.subarray(t.offset, t.offset + t.nbytes));
      device.queue.writeBuffer(buffer, 0, bytes);
      tensors.push({ buffer, shape: t.shape, dtype: t.dtype, name: t.name });
    }
  }
  return { tensors, cached };
}
