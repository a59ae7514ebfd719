// ModelSlot: one loaded generative model of an engine (page_engine.js keeps one per model id).
// `chatCompletion` and `completion` take OpenAI requests and answer OpenAI objects, or an async
// iterable of chunks with `stream: true`; the sampling defaults and chat template come from the
// artifact, and from the chat options it was loaded with. Requests queue (no interleaving); a
// prompt past the context window is refused. `response_format` and forced tool calls constrain
// each token (constraint.js, XGrammar). What WebLLM apps read besides the responses lives here
// too: the last reply's text (`message`), the speeds so far (`stats`) and a sequence fed token
// by token (forwardTokensAndSample).

import { chatOptions, withOptionDefaults } from "./chat_options.js";
import { GrammarConstraints } from "./constraint.js";
import { formatConstraint, onlyOne } from "./constraint_request.js";
import { withEcho } from "./echo.js";
import { ModelCore } from "./engine.js";
import { ContextWindowSizeExceededError, EngineNotLoadedError, InvalidRequestError } from "./errors.js";
import { generateChoice } from "./generation.js";
import { decodeImage, splitImages } from "./image_input.js";
import { samplingParams } from "./params.js";
import { RawSequence } from "./raw_sequence.js";
import { RequestQueue } from "./request_queue.js";
import { reasoningFormat } from "./reasoning.js";
import { withReplies } from "./replies.js";
import { RuntimeStats } from "./runtime_stats.js";
import { toolPlan } from "./tool_events.js";
import { wholeToolCalls } from "./whole_tool_calls.js";
import { FORMATS, chunkOf, collect, usageChunk, usageOf } from "./responses.js";

let requestCount = 0;

export class ModelSlot {
  // loaded: loader.js's {runner, codec, vision}; options: chat_options.js's {sampling,
  // contextWindow}; processor: a WebLLM LogitProcessor or null.
  constructor(modelId, { runner, codec, vision }, { options = chatOptions(), processor = null } = {}) {
    this.modelId = modelId;
    this.kind = "generate";
    this.core = new ModelCore(runner, codec, vision);
    if (options.contextWindow) this.core.window = Math.min(this.core.window, options.contextWindow);
    this.grammars = new GrammarConstraints(codec.tokenizerJson, runner.config.model?.vocab_size ?? 0, codec.eosIds);
    this.sampling = options.sampling;
    this.processor = processor;
    this.lost = null;
    this.queue = new RequestQueue();
    this.control = { interrupted: false };
    this.message = ""; // the last choice's text so far (WebLLM's getMessage)
    this.stats = new RuntimeStats();
    this.raw = null; // forwardTokensAndSample's RawSequence
  }

  loaded() {
    if (this.lost) throw this.lost;
    if (!this.core) throw new EngineNotLoadedError();
    return this.core;
  }

  async chatCompletion(request) {
    const core = this.loaded();
    request = withOptionDefaults(request, this.sampling);
    if (!Array.isArray(request.messages) || !request.messages.length) {
      throw new InvalidRequestError("messages must be a non-empty list", "messages");
    }
    const tools = toolPlan(request);
    const reasoning = reasoningFormat(request.reasoning_format, core.codec);
    const constraint = onlyOne([formatConstraint(request.response_format), tools.constraint]);
    const { messages, images } = splitImages(request.messages);
    if (!images.length) {
      const promptIds = core.codec.chatPrompt(request.messages, request.tools ?? null);
      return this.respond(request, promptIds, FORMATS.chat, { tools, constraint, reasoning });
    }
    const where = images[0].where;
    if (!core.vision) throw new InvalidRequestError(`${where}: this model takes text only (it was compiled without an image encoder)`, where);
    const pixels = await Promise.all(images.map(decodeImage));
    const text = core.vision.promptText(core.codec.chatText(messages, request.tools ?? null), pixels);
    const promptIds = core.codec.encode(text, false);
    const runs = core.vision.runs(promptIds, pixels);
    return this.respond(request, promptIds, FORMATS.chat, { tools, constraint, reasoning, images: { runs, pixels } });
  }

  async completion(request) {
    const core = this.loaded();
    request = withOptionDefaults(request, this.sampling);
    const { prompt } = request;
    const ids = typeof prompt === "string" ? core.codec.encode(prompt, true) : prompt;
    const vocab = core.runner.config.model?.vocab_size ?? Infinity;
    if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id) && id >= 0 && id < vocab)) {
      throw new InvalidRequestError(`prompt must be a string or a list of token ids in [0, ${vocab})`, "prompt");
    }
    const reply = await this.respond(request, ids, FORMATS.text, { constraint: formatConstraint(request.response_format) });
    return request.echo ? withEcho(reply, typeof prompt === "string" ? prompt : core.codec.decode(ids)) : reply;
  }

  // The model's sampling defaults as mlcx compile recorded them (mlcx-config.json "sampling").
  get samplingDefaults() {
    return this.loaded().runner.config.sampling ?? {};
  }

  // `plan`: {tools (toolPlan's, chat only), constraint ({kind, spec, param} or null), reasoning
  // (the reply format, reasoning.js: chat only), images ({runs, pixels} of a prompt with
  // images, encoded when its turn comes, or null)}.
  async respond(request, promptIds, format, { tools = null, constraint = null, reasoning = null, images = null }) {
    const core = this.loaded();
    const params = samplingParams(request, this.samplingDefaults, core.runner.config.model?.vocab_size ?? 0);
    checkFits(promptIds.length, params.maxTokens, core.window);
    const grammar = constraint && (await this.grammars.compile(constraint));
    const meta = { id: `${format === FORMATS.chat ? "chatcmpl" : "cmpl"}-${++requestCount}`,
                   created: Math.floor(Date.now() / 1000), model: this.modelId, format,
                   returnIds: request.return_token_ids === true, promptIds };
    const generated = this.events(promptIds, params, { grammar, images });
    const events = reasoning ? wholeToolCalls(withReplies(generated, { format: reasoning, codec: core.codec, promptIds, tools })) : generated;
    if (request.stream) return this.chunks(events, meta, request.stream_options?.include_usage === true);
    return this.whole(events, meta);
  }

  async whole(events, meta) {
    const all = [];
    let usage = null;
    for await (const e of events) {
      if (e.usage) usage = e.usage;
      else all.push(e);
    }
    return collect(all, meta, usage);
  }

  async *chunks(events, meta, includeUsage) {
    const started = new Set();
    for await (const e of events) {
      if (e.usage) {
        if (includeUsage) yield usageChunk(meta, e.usage);
        continue;
      }
      yield chunkOf(e, meta, !started.has(e.index));
      started.add(e.index);
    }
  }

  // Every token of every choice in turn, then {usage}; holds the engine's turn throughout.
  async *events(promptIds, params, { grammar = null, images = null } = {}) {
    const release = await this.queue.acquire();
    const control = (this.control = { interrupted: false });
    try {
      const core = this.loaded();
      this.closeRaw();
      const runs = images ? await core.vision.promptImages(images.runs, images.pixels) : [];
      let completion = 0;
      const stats = []; // each choice's
      for (let index = 0; index < params.n; index++) {
        const constraint = grammar && (await this.grammars.matcher(grammar));
        this.message = "";
        try {
          for await (const e of generateChoice(core, promptIds, params, index, control,
                                               { constraint, images: runs, processor: this.processor })) {
            stats[index] = e.stats;
            completion += 1;
            this.message += e.text;
            yield { index, token: e.token, text: e.text, finish: e.finish, entry: this.entry(e) };
          }
        } finally {
          constraint?.dispose();
        }
      }
      this.stats.add(stats);
      yield { usage: usageOf(promptIds.length, completion, stats) };
    } finally {
      if (grammar) this.grammars.release(grammar);
      release();
    }
  }

  entry(e) {
    if (e.logprob === null) return null;
    const piece = (id) => this.core.codec.piece(id);
    return { token: piece(e.token), logprob: e.logprob, top: e.top?.map((t) => ({ token: piece(t.id), logprob: t.logprob })) };
  }

  // Ends the running generation after its current token (finish_reason "abort").
  interruptGenerate() {
    this.control.interrupted = true;
  }

  // Forgets every cached conversation prefix (the next request computes its whole prompt),
  // forwardTokensAndSample's sequence and (unless keepStats) the speeds so far.
  async resetChat(keepStats = false) {
    const release = await this.queue.acquire();
    try {
      const core = this.loaded();
      this.closeRaw();
      core.resetCache();
      if (!keepStats) this.stats = new RuntimeStats();
      this.processor?.resetState();
    } finally {
      release();
    }
  }

  // Feeds token ids to the sequence kept since the last request (or resetChat) and samples
  // the next token with the chat options' sampling.
  async forwardTokensAndSample(inputIds, isPrefill) {
    const release = await this.queue.acquire();
    try {
      const core = this.loaded();
      const vocab = core.runner.config.model?.vocab_size ?? 0;
      this.raw ??= new RawSequence(core, samplingParams(this.sampling, this.samplingDefaults, vocab));
      const started = performance.now();
      const token = await this.raw.next(inputIds, this.processor);
      this.stats.record(isPrefill, isPrefill ? inputIds.length : 1, performance.now() - started);
      return token;
    } finally {
      release();
    }
  }

  closeRaw() {
    this.raw?.close();
    this.raw = null;
  }

  // Frees the model's GPU memory (its device is shared, gpu.js). A running generation is
  // interrupted first, and the queue waits for it to end.
  async dispose() {
    if (!this.core) return;
    this.interruptGenerate();
    const release = await this.queue.acquire();
    const core = this.core;
    this.closeRaw();
    this.core = null;
    this.disposed = true;
    release();
    core.vision?.dispose();
    core.runner.dispose();
  }

  // KV pages in use (0 when no generation holds any) and free: what a caller checks after abort.
  kvUsage() {
    const kv = this.loaded().kv;
    return { usedBlocks: kv.usedBlocks, freeBlocks: kv.pool.numFree };
  }
}

// As the Python engine's check_fits: the prompt must leave room for one token; a given
// max_tokens must fit beside it.
function checkFits(promptLen, maxTokens, window) {
  if (promptLen === 0) throw new InvalidRequestError("the prompt is empty; give at least one token", "messages");
  if (promptLen >= window) {
    throw new ContextWindowSizeExceededError(
      `the prompt has ${promptLen} tokens but the context window is ${window}; shorten the prompt`);
  }
  if (maxTokens !== null && promptLen + maxTokens > window) {
    throw new ContextWindowSizeExceededError(
      `the prompt (${promptLen} tokens) plus max_tokens (${maxTokens}) exceeds the context window of ` +
      `${window} tokens; lower max_tokens to at most ${window - promptLen}`);
  }
}
