// The page side of a worker engine: WebWorkerMLCEngine has MLCEngine's methods and sends each
// call to the WebWorkerMLCEngineHandler in `worker` (worker_handler.js has the messages); the
// engine's error events (a lost device) are dispatched on it too.
// Streams arrive as async iterables; leaving one early cancels it in the worker.

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

export class WebWorkerMLCEngine extends EventTarget {
  constructor(worker) {
    super();
    this.worker = worker;
    this.pending = new Map(); // id -> {resolve, reject, onProgress} or a ChunkQueue
    worker.addEventListener("message", (event) => this.receive(event.data));
    this.chat = { completions: { create: (request) => this.call("chatCompletion", [request], request.stream) } };
    this.completions = { create: (request) => this.call("completion", [request], request.stream) };
  }

  receive(msg) {
    if (msg.kind === "event") {
      this.dispatchEvent(Object.assign(new Event(msg.type), { error: errorFrom(msg.error) }));
      return;
    }
    const target = this.pending.get(msg.id);
    if (!target) return;
    if (target instanceof ChunkQueue) {
      if (msg.kind === "chunk" || msg.kind === "done" || msg.kind === "error") target.push(msg);
      if (msg.kind !== "chunk") this.pending.delete(msg.id);
      return;
    }
    if (msg.kind === "progress") return target.onProgress?.(msg.value);
    this.pending.delete(msg.id);
    msg.kind === "error" ? target.reject(errorFrom(msg.error)) : target.resolve(msg.value);
  }

  // A whole answer, or (stream) an async iterable that starts once the worker has the call.
  call(method, args, stream = false, onProgress = undefined) {
    const id = ++nextId;
    if (stream) {
      const queue = new ChunkQueue(() => this.worker.postMessage({ id, method: "cancel" }));
      this.pending.set(id, queue);
      this.worker.postMessage({ id, method, args });
      return Promise.resolve(queue);
    }
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.worker.postMessage({ id, method, args });
    });
  }

  // `signal` stays on this side (an AbortSignal cannot be posted): it is checked when the
  // load ends, and the engine unloaded if it fired.
  async reload(artifactUrl, { initProgressCallback, signal, ...options } = {}) {
    const url = new URL(artifactUrl, globalThis.location?.href).href;
    signal?.throwIfAborted();
    await this.call("reload", [url, options], false, initProgressCallback);
    if (signal?.aborted) {
      await this.unload();
      signal.throwIfAborted();
    }
  }

  interruptGenerate() {
    this.worker.postMessage({ id: ++nextId, method: "interruptGenerate" });
  }

  resetChat() {
    return this.call("resetChat", []);
  }

  unload() {
    return this.call("unload", []);
  }

  kvUsage() {
    return this.call("kvUsage", []);
  }
}

// The page side of a Service Worker engine: messages go to the controlling service worker.
export class ServiceWorkerMLCEngine extends WebWorkerMLCEngine {
  constructor(container = navigator.serviceWorker) {
    super({
      addEventListener: (type, fn) => container.addEventListener(type, fn),
      postMessage: (msg) => container.controller.postMessage(msg),
    });
  }
}

// An engine in the service worker that controls this page (it runs a
// ServiceWorkerMLCEngineHandler); the model stays loaded there across reloads.
export async function CreateServiceWorkerMLCEngine(artifactUrl, options = {}) {
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    throw new Error("no service worker controls this page yet: reload it, or call clients.claim() in the worker");
  }
  const engine = new ServiceWorkerMLCEngine(navigator.serviceWorker);
  await engine.reload(artifactUrl, options);
  return engine;
}

// WebLLM's entry point: an engine in `worker`, which runs a WebWorkerMLCEngineHandler.
export async function CreateWebWorkerMLCEngine(worker, artifactUrl, options = {}) {
  const engine = new WebWorkerMLCEngine(worker);
  await engine.reload(artifactUrl, options);
  return engine;
}
