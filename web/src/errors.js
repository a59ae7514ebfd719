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
