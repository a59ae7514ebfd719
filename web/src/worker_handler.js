// The worker side of a worker engine: WebWorkerMLCEngineHandler owns a real MLCEngine in a
// dedicated Web Worker (or, as ServiceWorkerMLCEngineHandler, in a Service Worker that keeps
// it loaded across page reloads) and answers the page's proxy (worker_engine.js). Messages:
//   page -> worker  {id, method, args}            a call; method "cancel" ends stream `id`
//   worker -> page  {id, kind: "result", value}   a call's answer
//                   {id, kind: "chunk", value}    one chunk of stream `id`, then {id, kind: "done"}
//                   {id, kind: "error", error}    {name, message} of what the call threw
//                   {id, kind: "progress", value} a load's InitProgressReport
//                   {kind: "event", type: "error", error}   the engine's error event (device lost)

import { MLCEngine } from "./mlc_engine.js";

export const errorOf = (err) => ({ name: err?.name ?? "Error", message: err?.message ?? String(err) });

export class WebWorkerMLCEngineHandler {
  constructor(engine = new MLCEngine(), post = (msg) => globalThis.postMessage(msg)) {
    this.engine = engine;
    this.post = post;
    this.cancelled = new Set();
    engine.addEventListener("error", (event) => this.post({ kind: "event", type: "error", error: errorOf(event.error) }));
    // method -> what it does with its args (the streaming ones answer through `stream`)
    this.methods = {
      reload: (id, [url, options], reply) => this.reload(url, options, (value) => reply({ id, kind: "progress", value })),
      chatCompletion: (id, [request]) => engine.chat.completions.create(request),
      completion: (id, [request]) => engine.completions.create(request),
      interruptGenerate: () => engine.interruptGenerate(),
      resetChat: () => engine.resetChat(),
      unload: () => engine.unload(),
      kvUsage: () => engine.kvUsage(),
      cancel: (id, args, reply, key) => this.cancelled.add(key),
    };
  }

  reload(url, options, initProgressCallback) {
    return this.engine.reload(url, { ...options, initProgressCallback });
  }

  // Pass each MessageEvent the worker receives; a Service Worker's come from several pages,
  // each answered through its `source` (ids are unique per page only).
  async onmessage(event) {
    const { id, method, args = [] } = event.data;
    const reply = event.source ? (msg) => event.source.postMessage(msg) : this.post;
    const key = `${event.source?.id ?? ""}:${id}`;
    try {
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

// In a Service Worker: `new ServiceWorkerMLCEngineHandler()` listens by itself. The engine
// outlives the pages: a reload of the artifact already loaded (a page reloaded, a second
// tab) answers at once instead of loading it again.
export class ServiceWorkerMLCEngineHandler extends WebWorkerMLCEngineHandler {
  constructor(engine = new MLCEngine(), scope = globalThis) {
    super(engine, () => {});
    this.loadedUrl = null;
    scope.addEventListener("message", (event) => {
      const answered = this.onmessage(event);
      event.waitUntil?.(answered); // the browser keeps the worker alive until then
    });
  }

  async reload(url, options, initProgressCallback) {
    if (this.loadedUrl === url && this.engine.core) {
      initProgressCallback({ progress: 1, timeElapsed: 0, text: "already loaded in the service worker" });
      return;
    }
    this.loadedUrl = null;
    await super.reload(url, options, initProgressCallback);
    this.loadedUrl = url;
  }
}
