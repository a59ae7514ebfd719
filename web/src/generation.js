// One choice of a request, token by token (its images encoded in the prefill): mask what a
// constraint forbids, sample (penalties,
// seed + choice index), detokenize, hold back text that may start a stop string, and end on a
// stop string, EOS, a complete constraint, max tokens or an interrupt. Every exit, the
// consumer breaking out included, frees the sequence's pages.

import { IncrementalDetokenizer } from "./detokenizer.js";
import { TokenSampler } from "./sampler.js";
import { StopStringMatcher } from "./stop.js";

function finishReason(hitStop, eos, n, maxNew, control) {
  if (hitStop || eos) return "stop";
  if (n >= maxNew) return "length";
  return control.interrupted ? "abort" : null;
}

// The text a finished choice still holds (the detokenizer's, then the stop matcher's).
function tail(detok, stops) {
  const last = stops.feed(detok.flush());
  return last.stop ? { text: last.text, stop: true } : { text: last.text + stops.flush(), stop: false };
}

// Yields {token, text, logprob, top, finish (null until the last), stats}. `constraint`: the
// choice's TokenConstraint (constraint.js) or null; `images`: the prompt's image runs
// (vision.js promptImages); `processor`: a WebLLM LogitProcessor, given the logits before the
// constraint and the sampler and told each sampled token.
export async function* generateChoice(core, promptIds, params, index, control,
                                      { constraint = null, images = [], processor = null } = {}) {
  const maxNew = params.maxTokens ?? core.window - promptIds.length;
  const sampler = new TokenSampler(params, promptIds, index);
  const detok = new IncrementalDetokenizer(core.codec, promptIds);
  const stops = new StopStringMatcher(params.stop);
  const steps = core.run(promptIds, images);
  try {
    let step = (await steps.next()).value;
    const stats = { promptTokens: promptIds.length, cachedTokens: step.cached, prefillMs: step.prefillMs,
                    decodeMs: 0, generated: 0 };
    await constraint?.prepare();
    const decodeStart = performance.now();
    for (let n = 1; ; n++) {
      const logits = processor ? processor.processLogits(Float32Array.from(step.logits)) : step.logits;
      const s = sampler.sample(constraint ? constraint.masked(logits) : logits);
      processor?.processSampledToken(s.token);
      const eos = !params.ignoreEos && core.codec.eosIds.has(s.token);
      const complete = constraint ? await constraint.advance(s.token) : false;
      const out = stops.feed(eos ? "" : detok.push(s.token)); // a stop token adds no text
      let finish = finishReason(out.stop !== null, eos || complete, n, maxNew, control);
      let text = out.text;
      if (finish && out.stop === null) {
        const rest = tail(detok, stops);
        text += rest.text;
        if (rest.stop) finish = "stop";
      }
      Object.assign(stats, { generated: n, decodeMs: performance.now() - decodeStart });
      yield { token: s.token, text, logprob: s.logprob, top: s.top, finish, stats };
      if (finish) return;
      step = (await steps.next(s.token)).value;
    }
  } finally {
    await steps.return();
  }
}
