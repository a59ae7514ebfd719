// MLCEngine: WebLLM's engine in the page. Models are loaded by id: an appConfig record (the
// engine config's, or prebuiltAppConfig) names the artifact's URL (app_config.js), and an
// artifact URL itself works as an id. Several models load into one engine (`reload([a, b])`),
// each with its own GPU device and request queue (model_slot.js for generative models,
// embedding_slot.js for embedding models); a request names its model in `model` when there is
// more than one. unload() aborts a running load (the load then resolves, as WebLLM's does).

import { apiNamespaces } from "./engine_methods.js";
import { ModelType, modelIdToUse, prebuiltAppConfig, resolveModel } from "./app_config.js";
import { chatOptions } from "./chat_options.js";
import { EmbeddingSlot } from "./embedding_slot.js";
import { DeviceLostError, IncorrectPipelineLoadedError, ReloadArgumentError } from "./errors.js";
import { gpuVendor, maxStorageBufferBindingSize } from "./gpu_info.js";
import { loadModel } from "./loader.js";
import { log, setLogLevel } from "./log.js";
import { ModelSlot } from "./model_slot.js";

const KINDS = { [ModelType.embedding]: "embed", [ModelType.LLM]: "generate", [ModelType.VLM]: "generate" };

export class MLCEngine extends EventTarget {
  #loading = null; // the running reload's AbortController

  // engineConfig: WebLLM's {appConfig, initProgressCallback, logLevel, logitProcessorRegistry},
  // and mlcx's load options {kvBlocks, shardsUrl, visionShardsUrl, files, signal}
  // (index.d.ts); `loadModel` replaces loader.js's (the node tests load a fake model through it).
  constructor(engineConfig = {}) {
    super();
    const { appConfig, initProgressCallback, logLevel, logitProcessorRegistry, ...loadOptions } = engineConfig ?? {};
    this.appConfig = appConfig ?? prebuiltAppConfig;
    this.initProgressCallback = initProgressCallback;
    this.logitProcessorRegistry = logitProcessorRegistry ?? null;
    this.loadOptions = loadOptions;
    this.slots = new Map(); // model id -> ModelSlot | EmbeddingSlot
    if (logLevel) setLogLevel(logLevel);
    Object.assign(this, apiNamespaces(this));
  }

  setAppConfig(appConfig) {
    this.appConfig = appConfig;
  }

  setInitProgressCallback(initProgressCallback) {
    this.initProgressCallback = initProgressCallback;
  }

  getInitProgressCallback() {
    return this.initProgressCallback;
  }

  setLogLevel(logLevel) {
    setLogLevel(logLevel);
  }

  // Loads `modelId` (or a list, one after another), each with its chat options.
  async reload(modelId, chatOpts = undefined) {
    await this.unload();
    const ids = Array.isArray(modelId) ? modelId : [modelId];
    const opts = chatOpts === undefined ? [] : [chatOpts].flat();
    if (chatOpts !== undefined && opts.length !== ids.length) {
      throw new ReloadArgumentError(`reload got ${ids.length} model ids but ${opts.length} chat options; give one per model`);
    }
    if (new Set(ids.map(String)).size < ids.length) throw new ReloadArgumentError(`reload got a model id twice: ${ids.join(", ")}`);
    const loading = (this.#loading = new AbortController());
    const given = this.loadOptions.signal;
    const signal = given ? AbortSignal.any([loading.signal, given]) : loading.signal;
    try {
      for (const [i, id] of ids.entries()) {
        const slot = await this.#load(id, opts[i], signal);
        if (loading.signal.aborted) await slot.dispose();
        else this.slots.set(slot.modelId, slot);
      }
    } catch (err) {
      if (!loading.signal.aborted) {
        await this.unload();
        throw err;
      }
    } finally {
      if (this.#loading === loading) this.#loading = null;
    }
    if (loading.signal.aborted) log.warn("reload() was aborted by unload()");
  }

  async #load(id, chatOpts, signal) {
    const { modelId, url, record } = this.loadOptions.files ? { modelId: String(id), url: null, record: null }
      : resolveModel(id, this.appConfig);
    const load = this.loadOptions.loadModel ?? loadModel; // a test's stand-in, or loader.js
    const loaded = await load(url, { ...this.loadOptions, signal, integrity: record?.integrity,
                                     initProgressCallback: (r) => this.initProgressCallback?.(r) });
    const wanted = KINDS[record?.model_type ?? (loaded.task === "embed" ? ModelType.embedding : ModelType.LLM)];
    if (wanted !== loaded.task) {
      loaded.runner.dispose();
      throw new IncorrectPipelineLoadedError(modelId, loaded.task, `reload (the record says model_type ${record.model_type})`);
    }
    const slot = loaded.task === "embed" ? new EmbeddingSlot(modelId, loaded)
      : new ModelSlot(modelId, loaded, { options: chatOptions(record?.overrides, chatOpts),
                                         processor: this.logitProcessorRegistry?.get(modelId) ?? null });
    loaded.runner.device.lost?.then((info) => {
      if (slot.disposed) return; // unload() destroyed it on purpose
      slot.lost = new DeviceLostError(info.message || info.reason);
      this.dispatchEvent(Object.assign(new Event("error"), { error: slot.lost }));
    });
    return slot;
  }

  // Frees every model's GPU memory (running generations are interrupted first); a running
  // reload is aborted.
  async unload() {
    this.#loading?.abort(new DOMException("unload() was called during the load", "AbortError"));
    this.#loading = null;
    const slots = [...this.slots.values()];
    this.slots.clear();
    await Promise.all(slots.map((slot) => slot.dispose()));
  }

  // The loaded model a request or call is for (request.model / modelId when several are).
  #slot(requestName, modelId, kind = "generate") {
    const id = modelIdToUse([...this.slots.keys()], modelId, requestName);
    const slot = this.slots.get(id);
    if (slot.kind !== kind) throw new IncorrectPipelineLoadedError(id, slot.kind, requestName);
    return slot;
  }

  async chatCompletion(request) {
    return this.#slot("ChatCompletionRequest", request?.model).chatCompletion(request);
  }

  async completion(request) {
    return this.#slot("CompletionCreateParams", request?.model).completion(request);
  }

  async embedding(request) {
    return this.#slot("EmbeddingCreateParams", request?.model, "embed").embedding(request);
  }

  // The last reply's text (of its last choice), as far as it has come.
  async getMessage(modelId = undefined) {
    return this.#slot("getMessage", modelId).message;
  }

  async runtimeStatsText(modelId = undefined) {
    return this.#slot("runtimeStatsText", modelId).stats.text();
  }

  // Forgets the cached conversations (and the speeds, unless keepStats); nothing to do when no
  // model is loaded, as WebLLM.
  async resetChat(keepStats = false, modelId = undefined) {
    if (!this.slots.size || (modelId && !this.slots.has(modelId))) return;
    await this.#slot("resetChat", modelId).resetChat(keepStats);
  }

  // Ends every running generation after its current token (finish_reason "abort").
  interruptGenerate() {
    for (const slot of this.slots.values()) slot.interruptGenerate?.();
  }

  async forwardTokensAndSample(inputIds, isPrefill, modelId = undefined) {
    return this.#slot("forwardTokensAndSample", modelId).forwardTokensAndSample(inputIds, isPrefill);
  }

  async getGPUVendor() {
    return gpuVendor();
  }

  async getMaxStorageBufferBindingSize() {
    return maxStorageBufferBindingSize();
  }

  // KV pages in use (0 when no generation holds any) and free: what a caller checks after abort.
  kvUsage(modelId = undefined) {
    return this.#slot("kvUsage", modelId).kvUsage();
  }

  // The generative model's ModelCore when one is loaded (the demo page reads its runner).
  get core() {
    return [...this.slots.values()].find((s) => s.kind === "generate")?.core ?? null;
  }
}

// WebLLM's entry point: a loaded engine for `modelId` (an appConfig id or an artifact URL).
export async function CreateMLCEngine(modelId, engineConfig = {}, chatOpts = undefined) {
  const engine = new MLCEngine(engineConfig);
  await engine.reload(modelId, chatOpts);
  return engine;
}
