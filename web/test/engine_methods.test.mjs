// One engine API on every host: the public methods of MLCEngine (the page's), WebWorkerMLCEngine,
// ServiceWorkerMLCEngine and ExtensionServiceWorkerMLCEngine are the same list, ENGINE_METHODS,
// and it covers WebLLM's MLCEngineInterface (its src/types.ts, 0.2.8x) except nothing: what
// mlcx-web adds is kvUsage.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ENGINE_METHODS, ExtensionServiceWorkerMLCEngine, MLCEngine, ServiceWorkerMLCEngine, WebWorkerMLCEngine,
} from "../src/index.js";

// WebLLM's MLCEngineInterface, as its types.ts declares it (methods, then namespaces).
const WEBLLM_METHODS = [
  "setInitProgressCallback", "getInitProgressCallback", "setAppConfig", "reload", "chatCompletion",
  "completion", "embedding", "runtimeStatsText", "interruptGenerate", "unload", "resetChat", "getMessage",
  "getMaxStorageBufferBindingSize", "getGPUVendor", "forwardTokensAndSample", "setLogLevel",
];
const LEFT_OUT = []; // none: docs/web-library.md says so
const MLCX_EXTRAS = ["kvUsage"];

// Public methods: functions on the instance's prototype chain below EventTarget, and its own.
function publicMethods(engine) {
  const names = new Set();
  for (let p = Object.getPrototypeOf(engine); p && p !== EventTarget.prototype; p = Object.getPrototypeOf(p)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) {
      if (name !== "constructor" && typeof d.value === "function") names.add(name);
    }
  }
  for (const [name, value] of Object.entries(engine)) if (typeof value === "function") names.add(name);
  return [...names].sort();
}

const fakeWorker = { addEventListener() {}, postMessage() {} };
const fakeContainer = { addEventListener() {}, controller: fakeWorker };
const fakePort = { onMessage: { addListener() {} }, onDisconnect: { addListener() {} }, postMessage() {} };
const ENGINES = {
  MLCEngine: () => new MLCEngine(),
  WebWorkerMLCEngine: () => new WebWorkerMLCEngine(fakeWorker),
  ServiceWorkerMLCEngine: () => new ServiceWorkerMLCEngine({}, 0, fakeContainer),
  ExtensionServiceWorkerMLCEngine: () => new ExtensionServiceWorkerMLCEngine({}, 0, { connect: () => fakePort }),
};

test("every engine host has exactly the page engine's methods", () => {
  const page = publicMethods(new MLCEngine());
  assert.deepEqual(page, [...ENGINE_METHODS].sort());
  for (const [name, make] of Object.entries(ENGINES)) assert.deepEqual(publicMethods(make()), page, name);
});

test("the engine methods are WebLLM's MLCEngineInterface and kvUsage", () => {
  const want = [...WEBLLM_METHODS.filter((m) => !LEFT_OUT.includes(m)), ...MLCX_EXTRAS].sort();
  assert.deepEqual([...ENGINE_METHODS].sort(), want);
});

test("every engine host has WebLLM's OpenAI namespaces", () => {
  for (const [name, make] of Object.entries(ENGINES)) {
    const engine = make();
    for (const create of [engine.chat.completions.create, engine.completions.create, engine.embeddings.create]) {
      assert.equal(typeof create, "function", name);
    }
  }
});
