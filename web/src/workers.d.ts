// Types of the worker engines (worker_engine.js, worker_handler.js, extension_service_worker.js):
// proxies with MLCEngine's methods, and the handlers that run the engine.

import type { ChatOptions } from "./app_config.js";
import type { LogitProcessor, MLCEngine, MLCEngineConfig, MLCEngineInterface } from "./index.js";

/** A proxy with MLCEngine's methods for an engine in a Web Worker running WebWorkerMLCEngineHandler. */
// MLCEngineInterface's members, by declaration merging.
export interface WebWorkerMLCEngine extends MLCEngineInterface {}
export declare class WebWorkerMLCEngine extends EventTarget {
  constructor(worker: Worker, engineConfig?: MLCEngineConfig);
  kvUsage(modelId?: string): Promise<{ usedBlocks: number; freeBlocks: number }>;
}

export declare function CreateWebWorkerMLCEngine(
  worker: Worker, modelId: string | URL | (string | URL)[], engineConfig?: MLCEngineConfig,
  chatOpts?: ChatOptions | ChatOptions[]): Promise<WebWorkerMLCEngine>;

/** In the worker: `const h = new WebWorkerMLCEngineHandler(); self.onmessage = (e) => h.onmessage(e);` */
export declare class WebWorkerMLCEngineHandler {
  constructor(engine?: MLCEngine, post?: (message: unknown) => void);
  onmessage(event: MessageEvent | unknown): Promise<void>;
  setLogitProcessorRegistry(registry: Map<string, LogitProcessor>): void;
}

/** In a Service Worker: `new ServiceWorkerMLCEngineHandler()` listens to its pages by itself;
 * the engine stays loaded across page reloads (a reload of the same artifact answers at once). */
export declare class ServiceWorkerMLCEngineHandler extends WebWorkerMLCEngineHandler {
  constructor(engine?: MLCEngine, scope?: EventTarget);
}

/** A proxy with MLCEngine's methods for the engine in the service worker controlling the page;
 * it pings the worker every keepAliveMs (0: never) so the browser keeps it and its model. */
export declare class ServiceWorkerMLCEngine extends WebWorkerMLCEngine {
  constructor(engineConfig?: MLCEngineConfig, keepAliveMs?: number, container?: ServiceWorkerContainer);
}

export declare function CreateServiceWorkerMLCEngine(
  modelId: string | URL | (string | URL)[], engineConfig?: MLCEngineConfig, chatOpts?: ChatOptions | ChatOptions[],
  keepAliveMs?: number): Promise<ServiceWorkerMLCEngine>;

/** WebLLM's extension service worker engine: the same engine over a chrome.runtime port. */
export declare class ExtensionServiceWorkerMLCEngineHandler extends WebWorkerMLCEngineHandler {
  constructor(port: unknown, engine?: MLCEngine);
  setPort(port: unknown): void;
}

export declare class ExtensionServiceWorkerMLCEngine extends WebWorkerMLCEngine {
  constructor(engineConfig?: MLCEngineConfig & { extensionId?: string; onDisconnect?: () => void }, keepAliveMs?: number);
}

export declare function CreateExtensionServiceWorkerMLCEngine(
  modelId: string | URL | (string | URL)[], engineConfig?: MLCEngineConfig & { extensionId?: string; onDisconnect?: () => void },
  chatOpts?: ChatOptions | ChatOptions[], keepAliveMs?: number): Promise<ExtensionServiceWorkerMLCEngine>;

