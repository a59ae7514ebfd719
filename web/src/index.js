// mlcx-web: the in-browser runtime as a library, in WebLLM's names (see index.d.ts).

export { CreateMLCEngine, MLCEngine } from "./mlc_engine.js";
export {
  ContextWindowSizeExceededError, DeviceLostError, EngineNotLoadedError, InvalidRequestError,
} from "./errors.js";
export { CreateWebWorkerMLCEngine, WebWorkerMLCEngine } from "./worker_engine.js";
export { WebWorkerMLCEngineHandler } from "./worker_handler.js";
export { deleteModelInCache, hasModelInCache } from "./model_cache.js";
