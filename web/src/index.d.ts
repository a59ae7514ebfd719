// Types of mlcx-web's API (WebLLM's names; OpenAI's request and response shapes).

export interface InitProgressReport {
  progress: number; // 0..1
  timeElapsed: number; // seconds
  text: string;
}

export interface MLCEngineConfig {
  initProgressCallback?: (report: InitProgressReport) => void;
  signal?: AbortSignal;
  /** KV cache pages to allocate (default 128), or a function of the plan and config. */
  kvBlocks?: number | ((plan: unknown, config: unknown) => number);
  /** Where the weight shards are when not next to the plan. */
  shardsUrl?: string | URL;
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
}

export type FinishReason = "stop" | "length" | "tool_calls" | "abort" | null;

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  extra: { time_to_first_token_s: number; prefill_tokens_per_s: number; decode_tokens_per_s: number };
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
  reload(artifactUrl: string | URL, config?: MLCEngineConfig): Promise<void>;
  interruptGenerate(): void;
  resetChat(): Promise<void>;
  unload(): Promise<void>;
}

export declare class MLCEngine extends EventTarget implements MLCEngineInterface {
  chat: MLCEngineInterface["chat"];
  completions: MLCEngineInterface["completions"];
  reload(artifactUrl: string | URL, config?: MLCEngineConfig): Promise<void>;
  interruptGenerate(): void;
  resetChat(): Promise<void>;
  unload(): Promise<void>;
  /** KV pages held by running generations (0 when idle) and free. */
  kvUsage(): { usedBlocks: number; freeBlocks: number };
}

export declare function CreateMLCEngine(artifactUrl: string | URL | null, config?: MLCEngineConfig): Promise<MLCEngine>;

export declare class InvalidRequestError extends Error {
  param: string | null;
}
export declare class ContextWindowSizeExceededError extends InvalidRequestError {
  code: "context_length_exceeded";
}
export declare class EngineNotLoadedError extends Error {}
export declare class DeviceLostError extends Error {}

/** A proxy with MLCEngine's API for an engine in a Web Worker running WebWorkerMLCEngineHandler. */
export declare class WebWorkerMLCEngine extends EventTarget implements MLCEngineInterface {
  constructor(worker: Worker);
  chat: MLCEngineInterface["chat"];
  completions: MLCEngineInterface["completions"];
  /** `signal` stays on the page: checked when the load ends (an AbortSignal cannot be posted). */
  reload(artifactUrl: string | URL, config?: MLCEngineConfig): Promise<void>;
  interruptGenerate(): void;
  resetChat(): Promise<void>;
  unload(): Promise<void>;
  kvUsage(): Promise<{ usedBlocks: number; freeBlocks: number }>;
}

export declare function CreateWebWorkerMLCEngine(
  worker: Worker, artifactUrl: string | URL, config?: MLCEngineConfig): Promise<WebWorkerMLCEngine>;

/** In the worker: `const h = new WebWorkerMLCEngineHandler(); self.onmessage = (e) => h.onmessage(e);` */
export declare class WebWorkerMLCEngineHandler {
  constructor(engine?: MLCEngine, post?: (message: unknown) => void);
  onmessage(event: MessageEvent): Promise<void>;
}

export interface CacheQueryOptions {
  /** Where the weight shards are when not next to the plan. */
  shardsUrl?: string | URL;
}

/** Whether the artifact is in the browser's Cache API: its config, plan, shaders, tokenizer
 * files and weight shards (a load then fetches nothing). */
export declare function hasModelInCache(artifactUrl: string | URL, options?: CacheQueryOptions): Promise<boolean>;
/** Drops the artifact's files and weight shards (and half-downloaded ones) from the cache; the
 * next load fetches them again (do this after rebuilding an artifact at the same URL). */
export declare function deleteModelInCache(artifactUrl: string | URL, options?: CacheQueryOptions): Promise<void>;

/** In a Service Worker: `new ServiceWorkerMLCEngineHandler()` listens to its pages by itself;
 * the engine stays loaded across page reloads (a reload of the same artifact answers at once). */
export declare class ServiceWorkerMLCEngineHandler extends WebWorkerMLCEngineHandler {
  constructor(engine?: MLCEngine, scope?: EventTarget);
}

/** A proxy with MLCEngine's API for the engine in the service worker controlling the page. */
export declare class ServiceWorkerMLCEngine extends WebWorkerMLCEngine {
  constructor(container?: ServiceWorkerContainer);
}

export declare function CreateServiceWorkerMLCEngine(
  artifactUrl: string | URL, config?: MLCEngineConfig): Promise<ServiceWorkerMLCEngine>;
