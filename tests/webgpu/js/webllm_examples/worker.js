// WebLLM's examples/get-started-web-worker/src/worker.ts (also multi-models'), import changed.
import { WebWorkerMLCEngineHandler } from "/mlcx-web/index.js";

const handler = new WebWorkerMLCEngineHandler();
self.onmessage = (msg) => {
  handler.onmessage(msg);
};
