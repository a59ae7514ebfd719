// The worker engine's two halves under node, joined by a fake worker that clones each message
// as postMessage does: the proxy answers as the engine it talks to, streams included; leaving
// a stream early cancels it in the worker (its pages freed); errors keep their names; a model id
// reaches the worker resolved with the page's appConfig; the service worker and the extension
// service worker keep one engine loaded for every page.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ExtensionServiceWorkerMLCEngine, ExtensionServiceWorkerMLCEngineHandler, ServiceWorkerMLCEngine,
  ServiceWorkerMLCEngineHandler, WebWorkerMLCEngine, WebWorkerMLCEngineHandler,
} from "../src/index.js";
import { fakeEngine } from "./fake_model.mjs";

const later = (fn) => setTimeout(fn);

function pair(engine, engineConfig = {}) {
  const listeners = [];
  const worker = {
    addEventListener: (_, fn) => listeners.push(fn),
    postMessage: (data) => later(() => handler.onmessage({ data: structuredClone(data) })),
  };
  const handler = new WebWorkerMLCEngineHandler(engine, (msg) =>
    later(() => listeners.forEach((fn) => fn({ data: structuredClone(msg) }))));
  return new WebWorkerMLCEngine(worker, engineConfig);
}

const ask = (extra = {}) => ({ messages: [{ role: "user", content: "hello" }], temperature: 0.9, seed: 3,
                                max_tokens: 8, return_token_ids: true, ...extra });

test("the worker proxy answers what the engine itself answers", async () => {
  const local = await (await fakeEngine()).chat.completions.create(ask());
  const proxy = pair(await fakeEngine());
  const remote = await proxy.chat.completions.create(ask());
  assert.deepEqual(remote.choices, local.choices);
  assert.equal(await proxy.getMessage(), local.choices[0].message.content);
  const chunks = [];
  for await (const c of await pair(await fakeEngine()).chat.completions.create(ask({ stream: true }))) chunks.push(c);
  assert.deepEqual(chunks.map((c) => c.choices[0].token_ids[0]), local.choices[0].token_ids);
});

test("leaving a worker stream early frees its pages in the worker", async () => {
  const engine = await fakeEngine();
  const proxy = pair(engine);
  for await (const _ of await proxy.chat.completions.create(ask({ stream: true, max_tokens: 40 }))) break;
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(await proxy.kvUsage(), { usedBlocks: 0, freeBlocks: engine.core.kv.pool.numFree });
});

test("the engine's error event reaches the page's proxy", async () => {
  const engine = await fakeEngine();
  const proxy = pair(engine);
  const seen = new Promise((resolve) => proxy.addEventListener("error", (e) => resolve(e.error.name)));
  engine.core.runner.device.lose({ message: "gone" });
  assert.equal(await seen, "DeviceLostError");
  await assert.rejects(proxy.chat.completions.create(ask()), { name: "DeviceLostError" });
});

test("errors cross the worker boundary by name", async () => {
  const proxy = pair(await fakeEngine({ contextWindow: 16 }));
  await assert.rejects(proxy.chat.completions.create(ask({ max_tokens: 30 })), { name: "ContextWindowSizeExceededError" });
  await assert.rejects(proxy.embedding({ input: "hi" }), { name: "IncorrectPipelineLoadedError" });
});

test("a reload through the proxy resolves its id with the page's appConfig and reports progress", async () => {
  const engine = await fakeEngine();
  const { runner, codec } = engine.core;
  const urls = [];
  engine.loadOptions.loadModel = async (url, options) => {
    urls.push(url);
    options.initProgressCallback({ progress: 1, timeElapsed: 0, text: "ready" });
    return { runner, codec, vision: null, task: "generate" };
  };
  const reports = [];
  const appConfig = { model_list: [{ model: "https://example.test/models/tiny", model_id: "tiny" }] };
  const proxy = pair(engine, { appConfig, initProgressCallback: (r) => reports.push(r.text) });
  await proxy.reload("tiny", { temperature: 0 });
  assert.deepEqual(urls, ["https://example.test/models/tiny/"]);
  assert.deepEqual(reports, ["ready"]);
  const reply = await proxy.chatCompletion(ask({ temperature: undefined, seed: undefined }));
  assert.equal(reply.model, "tiny");
  const greedy = await proxy.chatCompletion(ask({ temperature: 0 }));
  assert.deepEqual(reply.choices, greedy.choices); // chatOpts' temperature 0 is the default
});

// A page of a fake service worker `scope`: what navigator.serviceWorker gives the proxy.
function servicePage(scope, id, engineConfig = {}) {
  const listeners = [];
  const source = { id, postMessage: (msg) => later(() => listeners.forEach((fn) => fn({ data: structuredClone(msg) }))) };
  const deliver = (msg) => scope.dispatchEvent(Object.assign(new Event("message"), { data: structuredClone(msg), source }));
  return new ServiceWorkerMLCEngine(engineConfig, 0, {
    addEventListener: (_, fn) => listeners.push(fn),
    controller: { postMessage: (msg) => later(() => deliver(msg)) },
  });
}

// An engine whose reload counts its loads instead of loading.
async function countingEngine() {
  const engine = await fakeEngine();
  const { runner, codec } = engine.core;
  engine.loads = 0;
  engine.loadOptions.loadModel = async () => {
    engine.loads += 1;
    return { runner, codec, vision: null, task: "generate" };
  };
  return engine;
}

const APP = { model_list: [{ model: "http://x/artifact/", model_id: "tiny" }] };

test("a service worker engine loads once for every page and answers each", async () => {
  const engine = await countingEngine();
  const scope = new EventTarget();
  new ServiceWorkerMLCEngineHandler(engine, scope);
  const [first, second] = [servicePage(scope, "tab-1", { appConfig: APP }), servicePage(scope, "tab-2", { appConfig: APP })];
  const reports = [];
  await first.reload("tiny");
  second.setInitProgressCallback((r) => reports.push(r.text));
  await second.reload("tiny");
  assert.equal(engine.loads, 1);
  assert.deepEqual(reports, ["already loaded in the service worker"]);
  const [a, b] = await Promise.all([first, second].map((p) => p.chat.completions.create(ask())));
  assert.deepEqual(a.choices, b.choices);
});

// chrome.runtime for a popup and its extension's background script: connected port pairs.
function fakeRuntime(onConnect) {
  const listenerList = () => {
    const fns = [];
    return { fns, addListener: (fn) => fns.push(fn) };
  };
  return {
    connect(...args) {
      const [a, b] = [{ onMessage: listenerList(), onDisconnect: listenerList() }, { onMessage: listenerList(), onDisconnect: listenerList() }];
      a.postMessage = (msg) => later(() => b.onMessage.fns.forEach((fn) => fn(structuredClone(msg))));
      b.postMessage = (msg) => later(() => a.onMessage.fns.forEach((fn) => fn(structuredClone(msg))));
      b.name = args.at(-1).name;
      onConnect(b);
      return a;
    },
  };
}

test("an extension service worker engine answers over a port and keeps its model across popups", async () => {
  const engine = await countingEngine();
  let handler;
  const runtime = fakeRuntime((port) => {
    assert.equal(port.name, "web_llm_service_worker");
    if (!handler) handler = new ExtensionServiceWorkerMLCEngineHandler(port, engine);
    else handler.setPort(port);
    port.onMessage.addListener(handler.onmessage.bind(handler));
  });
  const popup = () => new ExtensionServiceWorkerMLCEngine({ appConfig: APP }, 0, runtime);
  const first = popup();
  await first.reload("tiny");
  const reply = await first.chat.completions.create(ask());
  const second = popup();
  await second.reload("tiny");
  assert.equal(engine.loads, 1);
  assert.deepEqual((await second.chat.completions.create(ask())).choices, reply.choices);
});
