// The worker engine's two halves under node, joined by a fake worker that clones each message
// as postMessage does: the proxy answers as the engine it talks to, streams included; leaving
// a stream early cancels it in the worker (its pages freed); errors keep their names.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ServiceWorkerMLCEngine, ServiceWorkerMLCEngineHandler, WebWorkerMLCEngine, WebWorkerMLCEngineHandler,
} from "../src/index.js";
import { fakeEngine } from "./fake_model.mjs";

function pair(engine) {
  const listeners = [];
  const worker = {
    addEventListener: (_, fn) => listeners.push(fn),
    postMessage: (data) => setTimeout(() => handler.onmessage({ data: structuredClone(data) })),
  };
  const handler = new WebWorkerMLCEngineHandler(engine, (msg) =>
    setTimeout(() => listeners.forEach((fn) => fn({ data: structuredClone(msg) }))));
  return new WebWorkerMLCEngine(worker);
}

const ask = (extra = {}) => ({ messages: [{ role: "user", content: "hello" }], temperature: 0.9, seed: 3,
                                max_tokens: 8, return_token_ids: true, ...extra });

test("the worker proxy answers what the engine itself answers", async () => {
  const local = await fakeEngine().chat.completions.create(ask());
  const remote = await pair(fakeEngine()).chat.completions.create(ask());
  assert.deepEqual(remote.choices, local.choices);
  const chunks = [];
  for await (const c of await pair(fakeEngine()).chat.completions.create(ask({ stream: true }))) chunks.push(c);
  assert.deepEqual(chunks.map((c) => c.choices[0].token_ids[0]), local.choices[0].token_ids);
});

test("leaving a worker stream early frees its pages in the worker", async () => {
  const engine = fakeEngine();
  const proxy = pair(engine);
  for await (const _ of await proxy.chat.completions.create(ask({ stream: true, max_tokens: 40 }))) break;
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(await proxy.kvUsage(), { usedBlocks: 0, freeBlocks: engine.core.kv.pool.numFree });
});

test("the engine's error event reaches the page's proxy", async () => {
  const engine = fakeEngine();
  const proxy = pair(engine);
  const seen = new Promise((resolve) => proxy.addEventListener("error", (e) => resolve(e.error.name)));
  engine.onDeviceLost(engine.core.runner, { message: "gone" });
  assert.equal(await seen, "DeviceLostError");
});

test("errors cross the worker boundary by name", async () => {
  const proxy = pair(fakeEngine({ contextWindow: 16 }));
  await assert.rejects(proxy.chat.completions.create(ask({ max_tokens: 30 })), { name: "ContextWindowSizeExceededError" });
});

// A page of a fake service worker `scope`: what navigator.serviceWorker gives the proxy.
function servicePage(scope, id) {
  const listeners = [];
  const source = { id, postMessage: (msg) => setTimeout(() => listeners.forEach((fn) => fn({ data: structuredClone(msg) }))) };
  const deliver = (msg) => scope.dispatchEvent(Object.assign(new Event("message"), { data: structuredClone(msg), source }));
  return new ServiceWorkerMLCEngine({
    addEventListener: (_, fn) => listeners.push(fn),
    controller: { postMessage: (msg) => setTimeout(() => deliver(msg)) },
  });
}

test("a service worker engine loads once for every page and answers each", async () => {
  const engine = fakeEngine();
  let loads = 0;
  engine.reload = async () => (loads += 1);
  const scope = new EventTarget();
  new ServiceWorkerMLCEngineHandler(engine, scope);
  const [first, second] = [servicePage(scope, "tab-1"), servicePage(scope, "tab-2")];
  const reports = [];
  await first.reload("http://x/artifact/");
  await second.reload("http://x/artifact/", { initProgressCallback: (r) => reports.push(r.text) });
  assert.equal(loads, 1);
  assert.deepEqual(reports, ["already loaded in the service worker"]);
  const [a, b] = await Promise.all([first, second].map((p) => p.chat.completions.create(ask())));
  assert.deepEqual(a.choices, b.choices);
});
