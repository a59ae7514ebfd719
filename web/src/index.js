// mlcx-web: the in-browser runtime as a library, in WebLLM's names (see index.d.ts).

export { CreateMLCEngine, MLCEngine } from "./mlc_engine.js";
export {
  ContextWindowSizeExceededError, DeviceLostError, EngineNotLoadedError, InvalidRequestError,
} from "./errors.js";
export {
  CreateServiceWorkerMLCEngine, CreateWebWorkerMLCEngine, ServiceWorkerMLCEngine, WebWorkerMLCEngine,
} from "./worker_engine.js";
export { ServiceWorkerMLCEngineHandler, WebWorkerMLCEngineHandler } from "./worker_handler.js";
export { deleteModelInCache, hasModelInCache } from "./model_cache.js";
