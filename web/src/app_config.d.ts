// Types of app_config.js: WebLLM's app config (model records by id) and chat options.

/** WebLLM's ModelType: a record's `model_type` (an artifact's own `task` decides when absent). */
export declare const ModelType: { LLM: 0; embedding: 1; VLM: 2 };

/** Subresource Integrity hashes ("sha256-BASE64", sha384, sha512) of a record's files:
 * `config` is mlcx-config.json, `model_lib` the WebGPU plan, `tokenizer` by file name. */
export interface ModelIntegrity {
  config?: string;
  model_lib?: string;
  tokenizer?: Record<string, string>;
  onFailure?: "error" | "warn";
}

/** WebLLM's ModelRecord: `model` is the artifact's folder URL (a Hugging Face repository URL
 * gets `resolve/main/`, a relative one is resolved against the page); `model_lib` is ignored. */
export interface ModelRecord {
  model: string;
  model_id: string;
  model_lib?: string;
  overrides?: ChatOptions;
  model_type?: number;
  required_features?: string[];
  integrity?: ModelIntegrity;
  vram_required_MB?: number;
  low_resource_required?: boolean;
}

export interface AppConfig {
  model_list: ModelRecord[];
  /** "cache" (the Cache API) is what mlcx-web uses, whatever is given. */
  cacheBackend?: string;
}

/** WebLLM's chat options (reload's second argument, a record's `overrides`): the sampling
 * fields are defaults under a request's own, `context_window_size` lowers the window; other
 * chat-config fields are fixed by the compiled artifact and ignored with a warning. */
export interface ChatOptions {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  context_window_size?: number;
  [field: string]: unknown;
}

/** The models `mlcx web` serves (the npm package's lists none). */
export declare const prebuiltAppConfig: AppConfig;
export declare const modelVersion: string;
export declare const modelLibURLPrefix: string;
export declare const functionCallingModelIds: string[];
export declare function artifactUrlOf(model: string, base?: string): string;
export declare function findModelRecord(modelId: string, appConfig?: AppConfig): ModelRecord;
