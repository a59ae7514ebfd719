// node --test web/test/: web/src/download.js against a fake server whose connection drops
// (run by tests/webgpu/test_web_node.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { HttpError, RETRIES, download, rangeHeaders, resumeOffset } from "../src/download.js";

const DATA = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 251);

// A body that delivers `bytes` in 100-byte chunks, then fails after `failAfter` bytes.
function body(bytes, failAfter = Infinity) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= failAfter) return controller.error(new TypeError("network connection lost"));
      if (at >= bytes.length) return controller.close();
      const end = Math.min(at + 100, bytes.length, failAfter);
      controller.enqueue(bytes.slice(at, end));
      at = end;
    },
  });
}

// A server honouring Range (or not), dropping the connection at the given offsets in turn
// (quietly: the body just ends, when `quiet`).
function server({ drops = [], honoursRange = true, status = 200, quiet = false } = {}) {
  const requests = [];
  const fetchFn = async (url, { headers }) => {
    requests.push(headers.Range ?? null);
    if (status !== 200) return new Response("gone", { status });
    const from = honoursRange && headers.Range ? Number(/bytes=(\d+)-/.exec(headers.Range)[1]) : 0;
    const failAt = drops.shift() ?? Infinity;
    const init = from ? { status: 206, headers: { "Content-Range": `bytes ${from}-999/1000` } } : { status: 200 };
    const bytes = quiet ? DATA.slice(from, failAt) : DATA.slice(from);
    return new Response(body(bytes, quiet ? Infinity : failAt - from), init);
  };
  return { fetchFn, requests };
}

test("range headers and resume offsets", () => {
  assert.deepEqual(rangeHeaders(0), {});
  assert.deepEqual(rangeHeaders(300), { Range: "bytes=300-" });
  assert.equal(resumeOffset(206, "bytes 300-999/1000", 300), 300);
  assert.equal(resumeOffset(200, null, 300), 0);
  assert.equal(resumeOffset(206, null, 300), 300); // Content-Range not exposed by CORS
  assert.throws(() => resumeOffset(206, "bytes 0-999/1000", 300), /range request/);
});

test("a dropped connection resumes from the bytes received", async () => {
  const { fetchFn, requests } = server({ drops: [300, 700] });
  let progress = 0;
  const got = await download("x", { fetchFn, onBytes: (n) => (progress += n) });
  assert.deepEqual(got, DATA);
  assert.deepEqual(requests, [null, "bytes=300-", "bytes=700-"]);
  assert.equal(progress, 1000);
});

test("a server that ignores Range restarts the download, and progress goes back", async () => {
  const { fetchFn, requests } = server({ drops: [400], honoursRange: false });
  const seen = [];
  const got = await download("x", { fetchFn, onBytes: (n) => seen.push(n) });
  assert.deepEqual(got, DATA);
  assert.deepEqual(requests, [null, "bytes=400-"]);
  assert.ok(seen.includes(-400));
  assert.equal(seen.reduce((a, b) => a + b, 0), 1000);
});

test("bytes from an earlier session are continued, not fetched again", async () => {
  const { fetchFn, requests } = server();
  const got = await download("x", { fetchFn, partial: DATA.slice(0, 600) });
  assert.deepEqual(got, DATA);
  assert.deepEqual(requests, ["bytes=600-"]);
});

test("giving up keeps the partial bytes for the next session", async () => {
  const { fetchFn, requests } = server({ drops: Array.from({ length: RETRIES }, (_, i) => 100 * (i + 1)) });
  const err = await download("x", { fetchFn }).catch((e) => e);
  assert.equal(requests.length, RETRIES);
  assert.deepEqual(err.partial, DATA.slice(0, 100 * RETRIES));
});

test("an HTTP error is not retried", async () => {
  const { fetchFn, requests } = server({ status: 404 });
  await assert.rejects(download("x", { fetchFn }), HttpError);
  assert.equal(requests.length, 1);
});

test("a body that ends early resumes when the size is known", async () => {
  const { fetchFn, requests } = server({ drops: [500], quiet: true });
  assert.deepEqual(await download("x", { fetchFn, expectedBytes: 1000 }), DATA);
  assert.deepEqual(requests, [null, "bytes=500-"]);
});

test("a body longer than the index says is an error, not retried", async () => {
  const { fetchFn, requests } = server();
  await assert.rejects(download("x", { fetchFn, expectedBytes: 900 }), /index says 900/);
  assert.equal(requests.length, 1);
});
