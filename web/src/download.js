// Downloading one weight shard with progress and resume: after a dropped connection the
// request goes on from the bytes already received (HTTP Range), and bytes received before
// the app was closed are handed back in as `partial`. Servers that ignore Range answer 200:
// then the download starts over.

export const RETRIES = 3;

export const rangeHeaders = (have) => (have > 0 ? { Range: `bytes=${have}-` } : {});

export class HttpError extends Error {}

// How many already-received bytes the response continues from (0: it starts over). A
// cross-origin server may not expose Content-Range (CORS): a 206 to "bytes=N-" is then taken
// to start at N, as HTTP says it must.
export function resumeOffset(status, contentRange, have) {
  if (status === 200) return 0;
  if (status === 206 && (contentRange === null || contentRange.startsWith(`bytes ${have}-`))) return have;
  throw new HttpError(`unexpected answer to a range request: HTTP ${status} ${contentRange ?? ""}`);
}

export function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

// A body that ends before `expectedBytes` counts as a dropped connection (some WebViews end a
// stream quietly when the network goes away).
class EndedEarly extends Error {}

// Returns the shard's bytes; onBytes(delta) reports progress (negative when starting over).
// On failure the error carries `partial` (the bytes so far) for the caller to keep.
export async function download(url, { partial = null, expectedBytes = null, onBytes = () => {},
                                      fetchFn = fetch } = {}) {
  let chunks = partial?.byteLength ? [partial] : [];
  let have = partial?.byteLength ?? 0;
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await fetchFn(url, { headers: rangeHeaders(have) });
      if (!response.ok) throw new HttpError(`cannot fetch ${url}: HTTP ${response.status}`);
      if (resumeOffset(response.status, response.headers.get("Content-Range"), have) === 0 && have) {
        onBytes(-have);
        chunks = [];
        have = 0;
      }
      const reader = response.body.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        chunks.push(r.value);
        have += r.value.byteLength;
        onBytes(r.value.byteLength);
      }
      if (expectedBytes !== null && have < expectedBytes) throw new EndedEarly(`${url} ended at ${have} bytes`);
      if (expectedBytes !== null && have > expectedBytes) {
        throw new HttpError(`${url} has ${have} bytes, its index says ${expectedBytes}`);
      }
      return concat(chunks);
    } catch (err) {
      if (err instanceof HttpError || attempt + 1 >= RETRIES) {
        err.partial = concat(chunks);
        throw err;
      }
    }
  }
}
