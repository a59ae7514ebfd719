// The one engine API of every host: WebLLM's MLCEngineInterface, plus kvUsage. MLCEngine in
// the page (page_engine.js) and its proxies WebWorkerMLCEngine, ServiceWorkerMLCEngine and
// ExtensionServiceWorkerMLCEngine (worker_engine.js) have exactly these methods, and the
// OpenAI-shaped namespaces below; web/test/engine_methods.test.mjs holds them equal.

export const ENGINE_METHODS = [
  "reload", "unload", "chatCompletion", "completion", "embedding",
  "getMessage", "runtimeStatsText", "resetChat", "interruptGenerate", "forwardTokensAndSample",
  "setInitProgressCallback", "getInitProgressCallback", "setAppConfig", "setLogLevel",
  "getGPUVendor", "getMaxStorageBufferBindingSize", "kvUsage",
];

// chat.completions.create, completions.create, embeddings.create over an engine's methods.
export function apiNamespaces(engine) {
  return {
    chat: { completions: { create: (request) => engine.chatCompletion(request) } },
    completions: { create: (request) => engine.completion(request) },
    embeddings: { create: (request) => engine.embedding(request) },
  };
}
