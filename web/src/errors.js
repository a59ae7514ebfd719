// Errors a caller can tell apart by name (WebLLM's names where WebLLM has one).

export class InvalidRequestError extends Error {
  constructor(message, param = null) {
    super(message);
    this.name = "InvalidRequestError";
    this.param = param;
  }
}

// The prompt (or prompt plus max_tokens) does not fit the context window; as the Python
// engine's ContextWindowError / MaxTokensTooLargeError, refused before any step runs.
export class ContextWindowSizeExceededError extends InvalidRequestError {
  constructor(message) {
    super(message, "messages");
    this.name = "ContextWindowSizeExceededError";
    this.code = "context_length_exceeded";
  }
}

export class EngineNotLoadedError extends Error {
  constructor(message = "the engine is not loaded: call CreateMLCEngine or engine.reload first") {
    super(message);
    this.name = "EngineNotLoadedError";
  }
}

// The GPU device was lost (driver reset, tab in the background on a phone): reload the engine.
export class DeviceLostError extends Error {
  constructor(reason) {
    super(`the WebGPU device was lost (${reason}); call engine.reload(artifactUrl) to continue`);
    this.name = "DeviceLostError";
  }
}

// A model id the engine was asked to load is in no appConfig record (and is not a URL).
export class ModelNotFoundError extends Error {
  constructor(modelId, known) {
    super(`model id ${JSON.stringify(modelId)} is not in appConfig.model_list ` +
      `(${known.length ? `it has ${known.map((k) => JSON.stringify(k)).join(", ")}` : "it is empty"}); ` +
      "pass {appConfig: {model_list: [{model: ARTIFACT_URL, model_id}]}}, or the artifact's URL itself");
    this.name = "ModelNotFoundError";
  }
}

// request.model names no loaded model, or several are loaded and the request names none.
export class SpecifiedModelNotFoundError extends InvalidRequestError {
  constructor(loaded, requested, requestName) {
    super(`${requestName}: model ${JSON.stringify(requested)} is not loaded (loaded: ${loaded.join(", ")})`, "model");
    this.name = "SpecifiedModelNotFoundError";
  }
}

export class UnclearModelToUseError extends InvalidRequestError {
  constructor(loaded, requestName) {
    super(`${requestName}: several models are loaded (${loaded.join(", ")}); name one in the request's \`model\``, "model");
    this.name = "UnclearModelToUseError";
  }
}

// A generative request for an embedding model, or the other way round.
export class IncorrectPipelineLoadedError extends InvalidRequestError {
  constructor(modelId, kind, requestName) {
    super(`${requestName}: model ${JSON.stringify(modelId)} is ${kind === "embed" ? "an embedding" : "a generative"} model`, "model");
    this.name = "IncorrectPipelineLoadedError";
  }
}

// reload(modelIds, chatOpts): the two lists differ in length, or an id repeats.
export class ReloadArgumentError extends Error {
  constructor(message) {
    super(message);
    this.name = "ReloadArgumentError";
  }
}

// A file's bytes do not match the Subresource Integrity hash its model record gives.
export class IntegrityError extends Error {
  constructor(url, expected, actual) {
    super(`integrity check failed for ${url}: expected ${expected}, got ${actual}`);
    this.name = "IntegrityError";
    Object.assign(this, { url, expected, actual });
  }
}
