// An OpenAI request's sampling fields -> the sampler's params, validated once at the edge with
// mlcx/runtime/sample/params.py's limits, over the artifact's recorded defaults
// (mlcx-config.json "sampling": the fields a model may default, as SamplingParams.with_defaults).

import { InvalidRequestError } from "./errors.js";

export const DEFAULTABLE = ["temperature", "top_p", "top_k", "min_p", "repetition_penalty"];
const MAX_TOP_LOGPROBS = 20;
const MAX_N = 16;
const BUILTIN = { temperature: 1, top_p: 1, top_k: 0, min_p: 0, repetition_penalty: 1,
                  presence_penalty: 0, frequency_penalty: 0, n: 1, logprobs: false, top_logprobs: 0,
                  ignore_eos: false };

const isNum = (v) => typeof v === "number" && Number.isFinite(v);
const isInt = (v) => Number.isInteger(v);

// field -> [valid?, what it must be]
const CHECKS = {
  temperature: [(v) => isNum(v) && v >= 0 && v <= 100, "a number in [0, 100]"],
  top_p: [(v) => isNum(v) && v > 0 && v <= 1, "a number in (0, 1]"],
  top_k: [(v) => isInt(v) && v >= -1, "an integer >= 1, or 0/-1 to disable"],
  min_p: [(v) => isNum(v) && v >= 0 && v <= 1, "a number in [0, 1]"],
  repetition_penalty: [(v) => isNum(v) && v > 0, "a number > 0"],
  presence_penalty: [(v) => isNum(v) && Math.abs(v) <= 2, "a number in [-2, 2]"],
  frequency_penalty: [(v) => isNum(v) && Math.abs(v) <= 2, "a number in [-2, 2]"],
  n: [(v) => isInt(v) && v >= 1 && v <= MAX_N, `an integer in [1, ${MAX_N}]`],
  seed: [(v) => isInt(v) && v >= 0, "an integer >= 0"],
  max_tokens: [(v) => isInt(v) && v >= 1, "an integer >= 1"],
  logprobs: [(v) => typeof v === "boolean", "a boolean"],
  top_logprobs: [(v) => isInt(v) && v >= 0 && v <= MAX_TOP_LOGPROBS, `an integer in [0, ${MAX_TOP_LOGPROBS}]`],
  ignore_eos: [(v) => typeof v === "boolean", "a boolean"],
};

function checked(name, value) {
  const [ok, what] = CHECKS[name];
  if (!ok(value)) throw new InvalidRequestError(`${name} must be ${what}, got ${JSON.stringify(value)}`, name);
  return value;
}

function logitBias(value, vocabSize) {
  const out = {};
  for (const [key, bias] of Object.entries(value ?? {})) {
    const id = Number(key);
    if (!isInt(id) || id < 0 || (vocabSize && id >= vocabSize)) {
      throw new InvalidRequestError(`logit_bias token id must be in [0, ${vocabSize - 1}], got ${key}`, "logit_bias");
    }
    if (!isNum(bias) || Math.abs(bias) > 100) {
      throw new InvalidRequestError(`logit_bias[${key}] must be a number in [-100, 100], got ${bias}`, "logit_bias");
    }
    out[id] = bias;
  }
  return out;
}

function stopStrings(value) {
  const stop = typeof value === "string" ? [value] : value ?? [];
  if (!Array.isArray(stop) || stop.some((s) => typeof s !== "string" || !s)) {
    throw new InvalidRequestError("stop must be a non-empty string or a list of them", "stop");
  }
  return [...new Set(stop)];
}

// `request`: OpenAI fields (snake_case); `defaults`: the artifact's; -> the sampler's params.
export function samplingParams(request, defaults = {}, vocabSize = 0) {
  const given = (k) => request[k] !== undefined && request[k] !== null;
  const pick = (k) => (given(k) ? request[k] : DEFAULTABLE.includes(k) && defaults[k] !== undefined ? defaults[k] : BUILTIN[k]);
  const v = Object.fromEntries(Object.keys(BUILTIN).map((k) => [k, checked(k, pick(k))]));
  if (v.top_logprobs > 0 && !v.logprobs) {
    throw new InvalidRequestError("top_logprobs requires logprobs: true", "top_logprobs");
  }
  return {
    temperature: v.temperature, topP: v.top_p, topK: Math.max(v.top_k, 0), minP: v.min_p,
    repetitionPenalty: v.repetition_penalty, presencePenalty: v.presence_penalty,
    frequencyPenalty: v.frequency_penalty, logitBias: logitBias(request.logit_bias, vocabSize),
    seed: given("seed") ? checked("seed", request.seed) : null,
    maxTokens: given("max_tokens") ? checked("max_tokens", request.max_tokens) : null,
    stop: stopStrings(request.stop), n: v.n, logprobs: v.logprobs, topLogprobs: v.top_logprobs,
    ignoreEos: v.ignore_eos,
  };
}
