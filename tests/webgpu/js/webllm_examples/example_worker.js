// The one Web Worker (worker.js) the worker examples of a run share. A new worker realm opens
// its own WebGPU device and compiles every kernel again (a third of the page's time on
// SwiftShader), so the examples WebLLM writes with `new Worker(new URL("./worker.js", ...))`
// take this one: the second finds its engine's kernels compiled and reloads it with its models.
let worker = null;

export const exampleWorker = () => (worker ??= new Worker(new URL("./worker.js", import.meta.url), { type: "module" }));
