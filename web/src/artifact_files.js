// An artifact's small files (mlcx-config.json, the plan, its WGSL shaders, the tokenizer
// files, the shard index: every .json and .wgsl) kept in the browser's Cache API beside the
// weight shards, so that a reload reads nothing from the network. As shards are, each file is
// keyed by its URL and sha256 and checked against it when read; the hashes live in the
// artifact's manifest (one cache entry under the artifact's URL), written once a load has
// read every file. The manifest is trusted until deleteModelInCache drops it: an artifact
// rebuilt at the same URL is loaded afresh after deleteModelInCache(url), or from a new URL.

import { sha256Hex } from "./weights.js";

export const FILES_CACHE = "mlcx-files-v1";
const CACHED = /\.(json|wgsl)$/;

export const manifestKey = (base) => `${new URL(base).href}#mlcx-manifest`;
export const fileKey = (url, sha256) => `${url}?sha256=${sha256}`;

// {url: sha256} of the artifact at `base`, or null when no load of it completed.
export async function readManifest(cache, base) {
  const hit = await cache.match(manifestKey(base));
  return hit ? hit.json() : null;
}

export class ArtifactFiles {
  // A fetch for the artifact at `base` that answers its small files from the cache.
  static async open(base, fetchFn) {
    const cache = "caches" in globalThis ? await caches.open(FILES_CACHE).catch(() => null) : null;
    const manifest = cache ? await readManifest(cache, base) : null;
    return new ArtifactFiles(base, cache, manifest, fetchFn);
  }

  constructor(base, cache, manifest, fetchFn) {
    Object.assign(this, { base, cache, fetchFn });
    this.known = manifest ?? {};
    this.read = {}; // url -> sha256 of every file this load read
    this.fetch = (url, init) => this.get(new URL(url, base).href, init);
  }

  async get(url, init) {
    if (!this.cache || !CACHED.test(new URL(url).pathname)) return this.fetchFn(url, init);
    if (this.known[url] === null) return this.absent(url); // a file the artifact does not have
    const cached = this.known[url] && (await this.fromCache(url, this.known[url]));
    const bytes = cached ?? (await this.fromNetwork(url, init));
    if (bytes === null) return this.absent(url);
    this.read[url] = this.read[url] ?? (await sha256Hex(bytes));
    if (!cached) await this.store(url, bytes, this.read[url]);
    return new Response(bytes);
  }

  // A 404 kept in the manifest as null: optional files (an image encoder's vision/encoder.json)
  // are probed, and a reload must learn of their absence without the network.
  absent(url) {
    this.read[url] = null;
    return new Response(null, { status: 404, statusText: "Not Found" });
  }

  async fromCache(url, sha256) {
    const hit = await this.cache.match(fileKey(url, sha256));
    if (!hit) return null;
    const bytes = new Uint8Array(await hit.arrayBuffer());
    if ((await sha256Hex(bytes)) === sha256) {
      this.read[url] = sha256;
      return bytes;
    }
    await this.cache.delete(fileKey(url, sha256)); // damaged: read it again from the network
    return null;
  }

  async fromNetwork(url, init) {
    const response = await this.fetchFn(url, init);
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }

  async store(url, bytes, sha256) {
    await this.cache.put(fileKey(url, sha256), new Response(bytes)).catch((err) => console.warn(
      `mlcx: ${url} is not kept in the browser cache (${err.name}: ${err.message}); the next load fetches it again`));
  }

  // Once every file is read: the manifest of this load, so the next one fetches nothing.
  async commit() {
    if (!this.cache) return;
    const same = Object.keys(this.read).every((url) => this.known[url] === this.read[url]);
    if (same && Object.keys(this.known).length === Object.keys(this.read).length) return;
    await this.cache.put(manifestKey(this.base), new Response(JSON.stringify(this.read))).catch(() => {});
  }
}
