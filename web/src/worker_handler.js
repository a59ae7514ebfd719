// The worker side of a worker engine: WebWorkerMLCEngineHandler owns a real MLCEngine in a
// dedicated Web Worker (or, as ServiceWorkerMLCEngineHandler, in a Service Worker that keeps
// it loaded across page reloads) and answers the page's proxy (worker_engine.js). Messages:
//   page -> worker  {id, method, args}            a call of an engine method (engine_methods.js);
//                                                 "cancel" ends stream `id`, "keepAlive" pings
//   worker -> page  {id, kind: "result", value}   a call's answer
//                   {id, kind: "chunk", value}    one chunk of stream `id`, then {id, kind: "done"}
//                   {id, kind: "error", error}    {name, message} of what the call threw
//                   {id, kind: "progress", value} a load's InitProgressReport
//                   {kind: "event", type: "error", error}   the engine's error event (device lost)
// `onmessage` takes a MessageEvent or the message itself (a chrome.runtime port hands those).

import { ENGINE_METHODS } from "./engine_methods.js";
import { MLCEngine } from "./page_engine.js";

export const errorOf = (err) => ({ name: err?.name ?? "Error", message: err?.message ?? String(err) });

// What stays on the page side (worker_engine.js keeps them, or sends them with reload).
const PAGE_SIDE = ["reload", "setInitProgressCallback", "getInitProgressCallback", "setAppConfig"];

export class WebWorkerMLCEngineHandler {
  constructor(engine = new MLCEngine(), post = (msg) => globalThis.postMessage(msg)) {
    this.engine = engine;
    this.post = post;
    this.cancelled = new Set();
    this.loadOptions = { ...engine.loadOptions }; // the worker's own, under the page's
    engine.addEventListener("error", (event) => this.post({ kind: "event", type: "error", error: errorOf(event.error) }));
    const forwarded = ENGINE_METHODS.filter((m) => !PAGE_SIDE.includes(m));
    // method -> what it does with its args (the streaming ones answer through `stream`)
    this.methods = {
      ...Object.fromEntries(forwarded.map((m) => [m, (id, args) => engine[m](...args)])),
      reload: (id, [modelId, chatOpts, config], reply) =>
        this.reload(modelId, chatOpts, config ?? {}, (value) => reply({ id, kind: "progress", value })),
      cancel: (id, args, reply, key) => this.cancelled.add(key),
      keepAlive: () => null,
    };
  }

  // WebLLM's: the worker's engine takes logit processors (functions cannot be posted).
  setLogitProcessorRegistry(registry) {
    this.engine.logitProcessorRegistry = registry;
  }

  async reload(modelId, chatOpts, { appConfig, logLevel, load } = {}, initProgressCallback) {
    if (appConfig) this.engine.setAppConfig(appConfig);
    if (logLevel) this.engine.setLogLevel(logLevel);
    this.engine.loadOptions = { ...this.loadOptions, ...load };
    this.engine.setInitProgressCallback(initProgressCallback);
    await this.engine.reload(modelId, chatOpts);
  }

  // Pass each message the worker receives; a Service Worker's come from several pages, each
  // answered through its `source` (ids are unique per page only).
  async onmessage(event) {
    const data = event?.method !== undefined ? event : event.data;
    const { id, method, args = [] } = data;
    const reply = event.source ? (msg) => event.source.postMessage(msg) : this.post;
    const key = `${event.source?.id ?? ""}:${id}`;
    try {
      if (!Object.hasOwn(this.methods, method)) throw new Error(`the worker engine has no method ${JSON.stringify(method)}`);
      const value = await this.methods[method](id, args, reply, key);
      if (value?.[Symbol.asyncIterator]) await this.stream(id, key, value, reply);
      else if (method !== "cancel") reply({ id, kind: "result", value });
    } catch (err) {
      reply({ id, kind: "error", error: errorOf(err) });
    }
  }

  // Breaking out on a cancel ends the generation here, which frees its KV pages.
  async stream(id, key, chunks, reply) {
    try {
      for await (const value of chunks) {
        if (this.cancelled.has(key)) break;
        reply({ id, kind: "chunk", value });
      }
      reply({ id, kind: "done" });
    } finally {
      this.cancelled.delete(key);
    }
  }
}

// A handler whose engine outlives its pages: a reload of what is loaded already (a page
// reloaded, a second tab, a popup opened again) answers at once instead of loading it again.
export class PersistentEngineHandler extends WebWorkerMLCEngineHandler {
  loadedKey = null;

  async reload(modelId, chatOpts, config = {}, initProgressCallback) {
    const ids = [modelId].flat();
    const records = (config.appConfig?.model_list ?? []).filter((r) => ids.includes(r.model_id));
    const key = JSON.stringify([ids, chatOpts ?? null, records, config.load ?? {}]);
    if (this.loadedKey === key && this.engine.slots.size === ids.length) {
      initProgressCallback({ progress: 1, timeElapsed: 0, text: "already loaded in the service worker" });
      return;
    }
    this.loadedKey = null;
    await super.reload(modelId, chatOpts, config, initProgressCallback);
    if (this.engine.slots.size === ids.length) this.loadedKey = key; // not when unload() aborted it
  }
}

// In a Service Worker: `new ServiceWorkerMLCEngineHandler()` listens by itself.
export class ServiceWorkerMLCEngineHandler extends PersistentEngineHandler {
  constructor(engine = new MLCEngine(), scope = globalThis) {
    super(engine, () => {});
    scope.addEventListener("message", (event) => {
      const answered = this.onmessage(event);
      event.waitUntil?.(answered); // the browser keeps the worker alive until then
    });
  }
}
