// The worker side of a worker engine: WebWorkerMLCEngineHandler owns a real MLCEngine in a
// dedicated Web Worker and answers the page's proxy (worker_engine.js). Messages:
//   page -> worker  {id, method, args}            a call; method "cancel" ends stream `id`
//   worker -> page  {id, kind: "result", value}   a call's answer
//                   {id, kind: "chunk", value}    one chunk of stream `id`, then {id, kind: "done"}
//                   {id, kind: "error", error}    {name, message} of what the call threw
//                   {id, kind: "progress", value} a load's InitProgressReport

import { MLCEngine } from "./mlc_engine.js";

export const errorOf = (err) => ({ name: err?.name ?? "Error", message: err?.message ?? String(err) });

export class WebWorkerMLCEngineHandler {
  constructor(engine = new MLCEngine(), post = (msg) => globalThis.postMessage(msg)) {
    this.engine = engine;
    this.post = post;
    this.cancelled = new Set();
    // method -> what it does with its args (the streaming ones answer through `stream`)
    this.methods = {
      reload: (id, [url, options]) =>
        engine.reload(url, { ...options, initProgressCallback: (value) => post({ id, kind: "progress", value }) }),
      chatCompletion: (id, [request]) => engine.chat.completions.create(request),
      completion: (id, [request]) => engine.completions.create(request),
      interruptGenerate: () => engine.interruptGenerate(),
      resetChat: () => engine.resetChat(),
      unload: () => engine.unload(),
      kvUsage: () => engine.kvUsage(),
      cancel: (id) => this.cancelled.add(id),
    };
  }

  // Pass each MessageEvent the worker receives.
  async onmessage(event) {
    const { id, method, args = [] } = event.data;
    try {
      const value = await this.methods[method](id, args);
      if (value?.[Symbol.asyncIterator]) await this.stream(id, value);
      else if (method !== "cancel") this.post({ id, kind: "result", value });
    } catch (err) {
      this.post({ id, kind: "error", error: errorOf(err) });
    }
  }

  // Breaking out on a cancel ends the generation here, which frees its KV pages.
  async stream(id, chunks) {
    try {
      for await (const value of chunks) {
        if (this.cancelled.has(id)) break;
        this.post({ id, kind: "chunk", value });
      }
      this.post({ id, kind: "done" });
    } finally {
      this.cancelled.delete(id);
    }
  }
}
