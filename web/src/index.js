// mlcx-web: the in-browser runtime as a library, in WebLLM's names (see index.d.ts).

export { CreateMLCEngine, MLCEngine } from "./page_engine.js";
export { ENGINE_METHODS } from "./engine_methods.js";
export {
  ModelType, artifactUrlOf, findModelRecord, functionCallingModelIds, modelLibURLPrefix, modelVersion,
  prebuiltAppConfig,
} from "./app_config.js";
export {
  ContextWindowSizeExceededError, DeviceLostError, EngineNotLoadedError, IncorrectPipelineLoadedError,
  IntegrityError, InvalidRequestError, ModelNotFoundError, ReloadArgumentError, SpecifiedModelNotFoundError,
  UnclearModelToUseError,
} from "./errors.js";
export { isValidSRI, verifyIntegrity } from "./integrity.js";
export { LOG_LEVELS } from "./log.js";
export {
  CreateServiceWorkerMLCEngine, CreateWebWorkerMLCEngine, ServiceWorkerMLCEngine, WebWorkerMLCEngine,
} from "./worker_engine.js";
export { ServiceWorkerMLCEngineHandler, WebWorkerMLCEngineHandler } from "./worker_handler.js";
export {
  CreateExtensionServiceWorkerMLCEngine, ExtensionServiceWorkerMLCEngine, ExtensionServiceWorkerMLCEngineHandler,
} from "./extension_service_worker.js";
export {
  deleteChatConfigInCache, deleteModelAllInfoInCache, deleteModelInCache, deleteModelWasmInCache, hasModelInCache,
} from "./model_cache.js";
