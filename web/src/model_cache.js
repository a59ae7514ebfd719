// WebLLM's cache queries for an artifact's weights in the browser's Cache API (weights.js
// keeps each shard under its URL and sha256): whether all are there, and dropping them.

import { CACHE, shardIndex, shardKey } from "./weights.js";

async function keys(artifactUrl, shardsUrl) {
  const base = new URL(artifactUrl, globalThis.location?.href);
  const { index, urls } = await shardIndex(base, shardsUrl && new URL(shardsUrl, base));
  return index.shards.map((shard, i) => shardKey(urls[i], shard));
}

export async function hasModelInCache(artifactUrl, { shardsUrl } = {}) {
  const cache = await caches.open(CACHE);
  const found = await Promise.all((await keys(artifactUrl, shardsUrl)).map((k) => cache.match(k)));
  return found.every(Boolean);
}

// Drops the artifact's shards (and any half-downloaded ones) from the cache.
export async function deleteModelInCache(artifactUrl, { shardsUrl } = {}) {
  const cache = await caches.open(CACHE);
  for (const key of await keys(artifactUrl, shardsUrl)) {
    await cache.delete(key);
    await cache.delete(`${key}&partial`);
  }
}
