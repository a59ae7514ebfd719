// WebLLM's integrity checks: a model record's `integrity` ({config, model_lib, tokenizer:
// {file: sri}, onFailure}) gives Subresource Integrity hashes ("sha256-BASE64", sha384, sha512)
// of the files a load reads; mlcx's `config` is mlcx-config.json, `model_lib` the WebGPU plan.
// A mismatch is an IntegrityError, or a warning with onFailure "warn". Weight shards are checked
// against the sha256 their index keeps on every load (weights.js).

import { IntegrityError } from "./errors.js";
import { log } from "./log.js";

const SRI = /^(sha256|sha384|sha512)-([A-Za-z0-9+/]+={0,2})$/;
const DIGEST = { sha256: ["SHA-256", 32], sha384: ["SHA-384", 48], sha512: ["SHA-512", 64] };

function parse(sri) {
  const match = SRI.exec(String(sri));
  if (!match) return null;
  const [, algorithm, hash] = match;
  try {
    return atob(hash).length === DIGEST[algorithm][1] ? { algorithm, hash } : null;
  } catch {
    return null;
  }
}

export const isValidSRI = (sri) => parse(sri) !== null;

async function sriOf(data, algorithm) {
  const digest = new Uint8Array(await crypto.subtle.digest(DIGEST[algorithm][0], data));
  return `${algorithm}-${btoa(String.fromCharCode(...digest))}`;
}

export async function verifyIntegrity(data, expectedSRI, url, onFailure = "error") {
  const parsed = parse(expectedSRI);
  if (!parsed) {
    throw new Error(`invalid integrity hash ${JSON.stringify(expectedSRI)}: write "sha256-BASE64", "sha384-BASE64" or "sha512-BASE64"`);
  }
  const actual = await sriOf(data, parsed.algorithm);
  if (actual === expectedSRI) return;
  if (onFailure === "warn") log.warn(`integrity check failed for ${url}: expected ${expectedSRI}, got ${actual}`);
  else throw new IntegrityError(url, expectedSRI, actual);
}

// A fetch that checks each file `integrity` names as it is read (from the network or the
// cache); `planFile()` names the plan once the config has been read.
export function withIntegrity(fetchFn, base, integrity, planFile) {
  const expected = (url) => {
    const name = new URL(url).href.slice(new URL(base).href.length);
    if (name === "mlcx-config.json") return integrity.config;
    if (name === planFile()) return integrity.model_lib;
    return integrity.tokenizer?.[name];
  };
  return async (url, init) => {
    const sri = expected(new URL(url, base));
    const response = await fetchFn(url, init);
    if (!sri || !response.ok) return response;
    const bytes = new Uint8Array(await response.arrayBuffer());
    await verifyIntegrity(bytes, sri, new URL(url, base).href, integrity.onFailure);
    return new Response(bytes, { status: response.status, headers: response.headers });
  };
}
