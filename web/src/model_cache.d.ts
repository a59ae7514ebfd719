// Types of model_cache.js: an artifact's files in the browser's Cache API (its image
// encoder's, vision/, too), by WebLLM's model id (through an appConfig) or by artifact URL.

import type { AppConfig } from "./app_config.js";

export interface CacheQueryOptions {
  /** Where the weight shards are when not next to the plan. */
  shardsUrl?: string | URL;
  /** Where the image encoder's weight shards are when not in the artifact's vision/params/. */
  visionShardsUrl?: string | URL;
}

/** Each takes WebLLM's (modelId, appConfig?) or mlcx's (artifactUrl, {shardsUrl}). */
type CacheTarget = [modelId: string | URL, appConfigOrOptions?: AppConfig | CacheQueryOptions];

/** Whether the artifact is in the browser's Cache API: its config, plan, shaders, tokenizer
 * files and weight shards, and its image encoder's (vision/) where it has one (a load then
 * fetches nothing). */
export declare function hasModelInCache(...target: CacheTarget): Promise<boolean>;
/** Drops the artifact's files and weight shards, the image encoder's too (and half-downloaded
 * ones) from the cache; the next load fetches them again (do this after rebuilding an artifact
 * at the same URL). */
export declare function deleteModelInCache(...target: CacheTarget): Promise<void>;
/** WebLLM's chat config: mlcx-config.json and mlcx-tokenizer.json. */
export declare function deleteChatConfigInCache(...target: CacheTarget): Promise<void>;
/** WebLLM's model library: the WebGPU plans (text and image encoder) and their shaders. */
export declare function deleteModelWasmInCache(...target: CacheTarget): Promise<void>;
export declare function deleteModelAllInfoInCache(...target: CacheTarget): Promise<void>;
