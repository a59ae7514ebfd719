// Weight shards (params/index.json + raw little-endian shard files, see
// mlcx/artifact/weight_shards.py) fetched once, kept in the browser's Cache API, checked
// against their sha256 and uploaded tensor by tensor.

import { createBuffer } from "./gpu.js";

const CACHE = "mlcx-weights-v1";

async function cachedShard(url, shard, onBytes) {
  const key = `${url}?sha256=${shard.sha256}`;
  const cache = "caches" in self ? await caches.open(CACHE) : null;
  let response = await cache?.match(key);
  const fromCache = Boolean(response);
  if (!response) {
    response = await fetch(url);
    if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  }
  const data = await response.arrayBuffer();
  onBytes(data.byteLength, fromCache);
  const digest = await crypto.subtle.digest("SHA-256", data);
  const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  if (hex !== shard.sha256) {
    await cache?.delete(key);
    throw new Error(`${shard.file} does not match its sha256; recompile or re-serve the model`);
  }
  if (!fromCache) await cache?.put(key, new Response(data));
  return data;
}

// Returns the tensors in index order as {buffer, shape, dtype}; onProgress(done, total, cached).
export async function loadWeights(device, baseUrl, onProgress) {
  const index = await (await fetch(new URL("params/index.json", baseUrl))).json();
  const total = index.shards.reduce((s, shard) => s + shard.nbytes, 0);
  let done = 0;
  let cached = true;
  const tensors = [];
  for (const [i, shard] of index.shards.entries()) {
    const data = await cachedShard(new URL(`params/${shard.file}`, baseUrl).href, shard, (n, hit) => {
      done += n;
      cached &&= hit;
      onProgress?.(done, total, cached);
    });
    for (const t of index.tensors.filter((t) => t.shard === i)) {
      const buffer = createBuffer(device, t.nbytes);
      const padded = Math.ceil(t.nbytes / 4) * 4;
      const bytes = new Uint8Array(padded);
      bytes.set(new Uint8Array(data, t.offset, t.nbytes));
      device.queue.writeBuffer(buffer, 0, bytes);
      tensors.push({ buffer, shape: t.shape, dtype: t.dtype, name: t.name });
    }
  }
  return { tensors, cached };
}
