// WebLLM's extension service worker engine: the service worker engine (worker_engine.js,
// worker_handler.js) over a chrome.runtime port instead of a page's service worker container.
// The extension's background script runs the handler:
//   chrome.runtime.onConnect.addListener((port) => {
//     if (!handler) handler = new ExtensionServiceWorkerMLCEngineHandler(port); else handler.setPort(port);
//     port.onMessage.addListener(handler.onmessage.bind(handler));
//   });
// and a popup or content script connects with CreateExtensionServiceWorkerMLCEngine. The model
// stays loaded in the background across popups (a reload of it answers at once).

import { MLCEngine } from "./page_engine.js";
import { PersistentEngineHandler } from "./worker_handler.js";
import { WebWorkerMLCEngine } from "./worker_engine.js";

export const PORT_NAME = "web_llm_service_worker";

export class ExtensionServiceWorkerMLCEngineHandler extends PersistentEngineHandler {
  constructor(port, engine = new MLCEngine()) {
    super(engine, (msg) => this.port?.postMessage(msg));
    this.setPort(port);
  }

  setPort(port) {
    this.port = port;
    port.onDisconnect?.addListener(() => {
      if (this.port === port) this.port = null;
    });
  }
}

// engineConfig: MLCEngine's, plus {extensionId, onDisconnect}.
export class ExtensionServiceWorkerMLCEngine extends WebWorkerMLCEngine {
  constructor(engineConfig = {}, keepAliveMs = 10000, runtime = globalThis.chrome?.runtime) {
    const { extensionId, onDisconnect, ...config } = engineConfig ?? {};
    const port = extensionId ? runtime.connect(extensionId, { name: PORT_NAME }) : runtime.connect({ name: PORT_NAME });
    super({
      addEventListener: (type, fn) => port.onMessage.addListener((data) => fn({ data })),
      postMessage: (msg) => port.postMessage(msg),
    }, config);
    this.port = port;
    const timer = keepAliveMs ? setInterval(() => port.postMessage({ method: "keepAlive" }), keepAliveMs) : null;
    timer?.unref?.();
    port.onDisconnect?.addListener(() => {
      clearInterval(timer);
      onDisconnect?.();
    });
  }
}

export async function CreateExtensionServiceWorkerMLCEngine(modelId, engineConfig = {}, chatOpts = undefined, keepAliveMs = 10000) {
  const engine = new ExtensionServiceWorkerMLCEngine(engineConfig, keepAliveMs);
  await engine.reload(modelId, chatOpts);
  return engine;
}
