// The page side of a worker engine: WebWorkerMLCEngine has MLCEngine's methods
// (engine_methods.js) and sends each call to the handler in `worker` (worker_handler.js has
// the messages); the engine's error events (a lost device) are dispatched on it too. Streams
// arrive as async iterables; leaving one early cancels it in the worker. The engine config
// stays here (progress callback, signal) or travels with reload (appConfig with absolute
// URLs, log level, mlcx's load options), so a worker's own location never changes what an id
// names. unload() during a reload aborts the load in the worker.

import { apiNamespaces } from "./engine_methods.js";
import { absoluteAppConfig, portableModelId, prebuiltAppConfig } from "./app_config.js";
import { log, setLogLevel } from "./log.js";

let nextId = 0;

const errorFrom = ({ name, message }) => Object.assign(new Error(message), { name });

// Messages of one stream, in order, as an async iterable.
class ChunkQueue {
  constructor(onCancel) {
    this.items = [];
    this.waiting = null;
    this.ended = false;
    this.onCancel = onCancel;
  }

  push(item) {
    if (this.waiting) {
      this.waiting(item);
      this.waiting = null;
    } else this.items.push(item);
  }

  async *[Symbol.asyncIterator]() {
    try {
      for (;;) {
        const item = this.items.length ? this.items.shift() : await new Promise((r) => (this.waiting = r));
        this.ended = item.kind !== "chunk";
        if (item.kind === "done") return;
        if (item.kind === "error") throw errorFrom(item.error);
        yield item.value;
      }
    } finally {
      if (!this.ended) this.onCancel();
    }
  }
}

// Load options a worker can be sent: a kvBlocks function and the signal stay here.
function portable({ kvBlocks, shardsUrl, visionShardsUrl, files }) {
  if (typeof kvBlocks === "function") log.warn("a kvBlocks function cannot reach a worker; the worker's engine picks its default");
  const href = (url) => new URL(url, globalThis.location?.href).href;
  return { ...(Number.isInteger(kvBlocks) ? { kvBlocks } : {}),
           ...(shardsUrl ? { shardsUrl: href(shardsUrl) } : {}),
           ...(visionShardsUrl ? { visionShardsUrl: href(visionShardsUrl) } : {}),
           ...(files ? { files: Array.from(files) } : {}) };
}

export class WebWorkerMLCEngine extends EventTarget {
  #pending = new Map(); // id -> {resolve, reject, onProgress} or a ChunkQueue
  #config;

  constructor(worker, engineConfig = {}) {
    super();
    this.worker = worker;
    const { appConfig, initProgressCallback, logLevel, logitProcessorRegistry, signal, ...load } = engineConfig ?? {};
    if (logitProcessorRegistry) {
      log.warn("logitProcessorRegistry cannot reach a worker: give it to the worker's engine, " +
        "new WebWorkerMLCEngineHandler(new MLCEngine({ logitProcessorRegistry }))");
    }
    this.#config = { appConfig: appConfig ?? prebuiltAppConfig, initProgressCallback, logLevel, signal, load: portable(load) };
    if (logLevel) setLogLevel(logLevel);
    worker.addEventListener("message", (event) => this.#receive(event.data));
    Object.assign(this, apiNamespaces(this));
  }

  #receive(msg) {
    if (msg?.kind === "event") {
      this.dispatchEvent(Object.assign(new Event(msg.type), { error: errorFrom(msg.error) }));
      return;
    }
    const target = this.#pending.get(msg?.id);
    if (!target) return;
    if (target instanceof ChunkQueue) {
      if (msg.kind === "chunk" || msg.kind === "done" || msg.kind === "error") target.push(msg);
      if (msg.kind !== "chunk") this.#pending.delete(msg.id);
      return;
    }
    if (msg.kind === "progress") return target.onProgress?.(msg.value);
    this.#pending.delete(msg.id);
    msg.kind === "error" ? target.reject(errorFrom(msg.error)) : target.resolve(msg.value);
  }

  // A whole answer, or (stream) an async iterable that starts once the worker has the call.
  #call(method, args, stream = false, onProgress = undefined) {
    const id = ++nextId;
    if (stream) {
      const queue = new ChunkQueue(() => this.worker.postMessage({ id, method: "cancel" }));
      this.#pending.set(id, queue);
      this.worker.postMessage({ id, method, args });
      return Promise.resolve(queue);
    }
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.worker.postMessage({ id, method, args });
    });
  }

  // The engine config's `signal` stays on this side (an AbortSignal cannot be posted): it
  // unloads the worker's engine, which aborts the load, and this reload then throws.
  async reload(modelId, chatOpts = undefined) {
    const { appConfig, logLevel, signal, load } = this.#config;
    const ids = [modelId].flat().map((id) => portableModelId(id, appConfig));
    signal?.throwIfAborted();
    const stop = () => this.unload();
    signal?.addEventListener("abort", stop);
    const config = { appConfig: absoluteAppConfig(appConfig), logLevel, load };
    try {
      await this.#call("reload", [Array.isArray(modelId) ? ids : ids[0], chatOpts, config], false,
        (report) => this.#config.initProgressCallback?.(report));
    } finally {
      signal?.removeEventListener("abort", stop);
    }
    signal?.throwIfAborted();
  }

  unload() {
    return this.#call("unload", []);
  }

  chatCompletion(request) {
    return this.#call("chatCompletion", [request], request?.stream);
  }

  completion(request) {
    return this.#call("completion", [request], request?.stream);
  }

  embedding(request) {
    return this.#call("embedding", [request]);
  }

  getMessage(modelId = undefined) {
    return this.#call("getMessage", [modelId]);
  }

  runtimeStatsText(modelId = undefined) {
    return this.#call("runtimeStatsText", [modelId]);
  }

  resetChat(keepStats = false, modelId = undefined) {
    return this.#call("resetChat", [keepStats, modelId]);
  }

  interruptGenerate() {
    this.worker.postMessage({ id: ++nextId, method: "interruptGenerate" });
  }

  forwardTokensAndSample(inputIds, isPrefill, modelId = undefined) {
    return this.#call("forwardTokensAndSample", [inputIds, isPrefill, modelId]);
  }

  setInitProgressCallback(initProgressCallback) {
    this.#config.initProgressCallback = initProgressCallback;
  }

  getInitProgressCallback() {
    return this.#config.initProgressCallback;
  }

  // Sent with the next reload.
  setAppConfig(appConfig) {
    this.#config.appConfig = appConfig;
  }

  setLogLevel(logLevel) {
    setLogLevel(logLevel);
    this.#config.logLevel = logLevel;
    this.worker.postMessage({ id: ++nextId, method: "setLogLevel", args: [logLevel] });
  }

  getGPUVendor() {
    return this.#call("getGPUVendor", []);
  }

  getMaxStorageBufferBindingSize() {
    return this.#call("getMaxStorageBufferBindingSize", []);
  }

  kvUsage(modelId = undefined) {
    return this.#call("kvUsage", [modelId]);
  }
}

// Pings the worker every `ms` (0: never) until `stop` is called, so a browser that ends idle
// service workers keeps this one and its loaded model (WebLLM's keepAliveMs).
function keepAlive(worker, ms) {
  if (!ms) return () => {};
  const timer = setInterval(() => worker.postMessage({ id: ++nextId, method: "keepAlive" }), ms);
  timer.unref?.();
  return () => clearInterval(timer);
}

// The page side of a Service Worker engine: messages go to the controlling service worker.
export class ServiceWorkerMLCEngine extends WebWorkerMLCEngine {
  constructor(engineConfig = {}, keepAliveMs = 10000, container = navigator.serviceWorker) {
    const worker = {
      addEventListener: (type, fn) => container.addEventListener(type, fn),
      postMessage: (msg) => container.controller?.postMessage(msg),
    };
    super(worker, engineConfig);
    keepAlive(worker, keepAliveMs);
  }
}

// An engine in the service worker that controls this page (it runs a
// ServiceWorkerMLCEngineHandler); the model stays loaded there across reloads.
export async function CreateServiceWorkerMLCEngine(modelId, engineConfig = {}, chatOpts = undefined, keepAliveMs = 10000) {
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    throw new Error("no service worker controls this page yet: reload it, or call clients.claim() in the worker");
  }
  const engine = new ServiceWorkerMLCEngine(engineConfig, keepAliveMs);
  await engine.reload(modelId, chatOpts);
  return engine;
}

// WebLLM's entry point: an engine in `worker`, which runs a WebWorkerMLCEngineHandler.
export async function CreateWebWorkerMLCEngine(worker, modelId, engineConfig = {}, chatOpts = undefined) {
  const engine = new WebWorkerMLCEngine(worker, engineConfig);
  await engine.reload(modelId, chatOpts);
  return engine;
}
