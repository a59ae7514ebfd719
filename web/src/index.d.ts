// Types of mlcx-web's API (WebLLM's names; OpenAI's request and response shapes). Model
// records, app configs and chat options are in app_config.d.ts, the worker engines in
// workers.d.ts, the browser cache calls in model_cache.d.ts.

import type { AppConfig, ChatOptions } from "./app_config.js";

export * from "./app_config.js";
export * from "./model_cache.js";
export * from "./workers.js";

export interface InitProgressReport {
  progress: number; // 0..1
  timeElapsed: number; // seconds
  text: string;
}

export type InitProgressCallback = (report: InitProgressReport) => void;
export type LogLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";
export declare const LOG_LEVELS: Record<LogLevel, number>;

/** WebLLM's LogitProcessor: sees each step's logits before sampling and each sampled token. */
export interface LogitProcessor {
  processLogits(logits: Float32Array): Float32Array;
  processSampledToken(token: number): void;
  resetState(): void;
}

/** The one method list every engine host has (MLCEngine, the worker and service worker proxies). */
export declare const ENGINE_METHODS: string[];
export declare function verifyIntegrity(data: ArrayBuffer | Uint8Array, expectedSRI: string, url: string, onFailure?: "error" | "warn"): Promise<void>;
export declare function isValidSRI(sri: string): boolean;

export interface MLCEngineConfig {
  /** Where model ids are looked up (default prebuiltAppConfig). */
  appConfig?: AppConfig;
  initProgressCallback?: InitProgressCallback;
  logLevel?: LogLevel;
  /** model id -> its LogitProcessor (the page engine, or the worker's own engine). */
  logitProcessorRegistry?: Map<string, LogitProcessor>;
  /** Aborts the load (reload then throws AbortError; unload() aborts it quietly). */
  signal?: AbortSignal;
  /** KV cache pages to allocate (default 128), or a function of the plan and config. */
  kvBlocks?: number | ((plan: unknown, config: unknown) => number);
  /** Where the weight shards are when not next to the plan. */
  shardsUrl?: string | URL;
  /** Where the image encoder's weight shards are when not in the artifact's vision/params/. */
  visionShardsUrl?: string | URL;
  /** The artifact's folder picked from disk (`<input type="file" webkitdirectory>`'s files):
   * loaded from those files, nothing fetched; the artifact URL is then ignored. */
  files?: Iterable<File>;
}

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

// OpenAI's content parts; image_url takes data: URLs (PNG, JPEG, WebP) for a model compiled
// with its image encoder.
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } | string };

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** An assistant's reasoning, as replies carry it: the chat template keeps or drops it. */
  reasoning_content?: string;
}

export interface Tool {
  type: "function";
  function: { name: string; description?: string; parameters?: object };
}

/** What the output must match, enforced token by token (XGrammar's WASM). JSON is written on
 * one line with ", " and ": " between items, as the Python server writes it. */
export type ResponseFormat =
  | { type: "text" }
  /** Any JSON object, or (WebLLM's form) one matching `schema`, an object or its JSON text. */
  | { type: "json_object"; schema?: object | string }
  /** OpenAI's form. */
  | { type: "json_schema"; json_schema: { name: string; schema?: object; description?: string; strict?: boolean } }
  /** WebLLM's form: an EBNF grammar in XGrammar's dialect (`root ::= ...`). */
  | { type: "grammar"; grammar: string };

export interface SamplingFields {
  /** One constraint per request (not with a forced tool_choice). A schema or grammar XGrammar
   * refuses is an InvalidRequestError with param "response_format" saying why. */
  response_format?: ResponseFormat | null;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  repetition_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  seed?: number | null;
  logprobs?: boolean;
  top_logprobs?: number;
  n?: number;
  stop?: string | string[] | null;
  ignore_eos?: boolean;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  /** vLLM's extension: prompt_token_ids and each choice's token_ids in the response. */
  return_token_ids?: boolean;
}

export interface ChatCompletionRequest extends SamplingFields {
  messages: ChatMessage[];
  /** Which loaded model answers (needed when the engine holds several). */
  model?: string | null;
  /** Given to the chat template (or written into the system message when it reads none). */
  tools?: Tool[];
  /** "auto" (the default with tools: a reply that begins with <tool_call> is parsed for calls),
   * "none" (content), "required" (the output is constrained to calls of the tools, a JSON array
   * of {"name", "arguments"} objects, or one object with parallel_tool_calls false) or a named
   * function (one call of it), as the Python server constrains them. */
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
  /** With tool_choice "required": whether several calls may come (default true). */
  parallel_tool_calls?: boolean;
  /** llama-server's: how the reply is split. "auto" (the default: the model's own format,
   * harmony or <think>, found from its template and vocabulary), "none" (all inline in
   * content), "think", "harmony"; "deepseek" is taken as "auto". */
  reasoning_format?: "auto" | "none" | "think" | "harmony" | "deepseek";
}

export interface CompletionRequest extends SamplingFields {
  prompt: string | number[];
  /** The prompt's text before each choice's (whole, and in each choice's first chunk). */
  echo?: boolean;
  model?: string | null;
}

export interface EmbeddingRequest {
  input: string | string[] | number[] | number[][];
  model?: string | null;
  encoding_format?: "float" | "base64";
  /** Matryoshka models only: the first k features, renormalized. */
  dimensions?: number;
}

export interface EmbeddingResponse {
  object: "list";
  model: string;
  data: { object: "embedding"; index: number; embedding: number[] | string }[];
  usage: { prompt_tokens: number; total_tokens: number; extra: { prefill_tokens_per_s: number } };
}

export type FinishReason = "stop" | "length" | "tool_calls" | "abort" | null;

/** As WebLLM counts it: prompt_tokens are the tokens prefilled this turn (a cached conversation
 * prefix is not), total_tokens = prompt_tokens + completion_tokens; OpenAI's prompt length is
 * extra.prompt_tokens_total, the prefix cache's hit prompt_tokens_details.cached_tokens. */
export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  extra: {
    prompt_tokens_total: number;
    time_to_first_token_s: number;
    prefill_tokens_per_s: number;
    decode_tokens_per_s: number;
    time_per_output_token_s: number;
  };
}

export interface TokenLogprob {
  token: string;
  logprob: number;
  top_logprobs: { token: string; logprob: number }[];
}

interface ResponseHead {
  id: string;
  created: number;
  model: string;
  prompt_token_ids?: number[];
}

export interface ChatCompletion extends ResponseHead {
  object: "chat.completion";
  choices: {
    index: number;
    /** reasoning_content: the reasoning (<think> text, harmony's analysis), where there is some. */
    message: { role: "assistant"; content: string | null; reasoning_content?: string; tool_calls?: ToolCall[] };
    finish_reason: FinishReason;
    logprobs: { content: TokenLogprob[] } | null;
    token_ids?: number[];
  }[];
  usage: CompletionUsage;
}

export interface ChatCompletionChunk extends ResponseHead {
  object: "chat.completion.chunk";
  choices: {
    index: number;
    delta: {
      role?: "assistant";
      content?: string;
      reasoning_content?: string;
      tool_calls?: { index: number; id?: string; type?: "function"; function: { name?: string; arguments: string } }[];
    };
    finish_reason: FinishReason;
    logprobs: { content: TokenLogprob[] } | null;
    token_ids?: number[];
  }[];
  usage?: CompletionUsage;
}

export interface Completion extends ResponseHead {
  object: "text_completion";
  choices: { index: number; text: string; finish_reason: FinishReason; logprobs: unknown; token_ids?: number[] }[];
  usage?: CompletionUsage;
}

export interface MLCEngineInterface {
  chat: {
    completions: {
      create(request: ChatCompletionRequest & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
      create(request: ChatCompletionRequest & { stream?: false }): Promise<ChatCompletion>;
    };
  };
  completions: {
    create(request: CompletionRequest & { stream: true }): Promise<AsyncIterable<Completion>>;
    create(request: CompletionRequest & { stream?: false }): Promise<Completion>;
  };
  embeddings: { create(request: EmbeddingRequest): Promise<EmbeddingResponse> };
  /** Loads model ids (appConfig records, or artifact URLs), one after another; unload() during it
   * aborts it and it resolves. */
  reload(modelId: string | URL | (string | URL)[], chatOpts?: ChatOptions | ChatOptions[]): Promise<void>;
  unload(): Promise<void>;
  chatCompletion(request: ChatCompletionRequest): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
  completion(request: CompletionRequest): Promise<Completion | AsyncIterable<Completion>>;
  embedding(request: EmbeddingRequest): Promise<EmbeddingResponse>;
  /** The last reply's text (its last choice), as far as it has come. */
  getMessage(modelId?: string): Promise<string>;
  /** "prefill: X tokens/sec, decoding: Y tokens/sec" over the requests since resetChat. */
  runtimeStatsText(modelId?: string): Promise<string>;
  resetChat(keepStats?: boolean, modelId?: string): Promise<void>;
  interruptGenerate(): void;
  /** Feeds token ids to a sequence kept until resetChat or the next request; samples the next. */
  forwardTokensAndSample(inputIds: number[], isPrefill: boolean, modelId?: string): Promise<number>;
  setInitProgressCallback(initProgressCallback?: InitProgressCallback): void;
  getInitProgressCallback(): InitProgressCallback | undefined;
  setAppConfig(appConfig: AppConfig): void;
  setLogLevel(logLevel: LogLevel): void;
  getGPUVendor(): Promise<string>;
  getMaxStorageBufferBindingSize(): Promise<number>;
  /** KV pages held by running generations (0 when idle) and free. */
  kvUsage(modelId?: string): { usedBlocks: number; freeBlocks: number } | Promise<{ usedBlocks: number; freeBlocks: number }>;
}

// MLCEngineInterface's members, by declaration merging.
export interface MLCEngine extends MLCEngineInterface {}
export declare class MLCEngine extends EventTarget {
  constructor(engineConfig?: MLCEngineConfig);
  kvUsage(modelId?: string): { usedBlocks: number; freeBlocks: number };
}

export declare function CreateMLCEngine(
  modelId: string | URL | (string | URL)[], engineConfig?: MLCEngineConfig, chatOpts?: ChatOptions | ChatOptions[]): Promise<MLCEngine>;

export declare class InvalidRequestError extends Error {
  param: string | null;
}
export declare class ContextWindowSizeExceededError extends InvalidRequestError {
  code: "context_length_exceeded";
}
export declare class EngineNotLoadedError extends Error {}
export declare class DeviceLostError extends Error {}

export declare class ModelNotFoundError extends Error {}
export declare class SpecifiedModelNotFoundError extends InvalidRequestError {}
export declare class UnclearModelToUseError extends InvalidRequestError {}
export declare class IncorrectPipelineLoadedError extends InvalidRequestError {}
export declare class ReloadArgumentError extends Error {}
export declare class IntegrityError extends Error {
  url: string;
  expected: string;
  actual: string;
}
