// OpenAI response shapes for the two endpoints: chat.completion(.chunk) and text_completion,
// streamed or whole, with usage as WebLLM reports it (prompt_tokens: the tokens prefilled this
// turn, a cached conversation prefix not counted; WebLLM's `extra` speeds) with OpenAI's prompt
// length kept in `extra.prompt_tokens_total` and the prefix cache's hit in
// `prompt_tokens_details.cached_tokens`, and, when asked for with `return_token_ids` (vLLM's
// name), the token ids.

const seconds = (ms) => ms / 1000;
const sum = (stats, f) => stats.reduce((n, s) => n + (s ? f(s) : 0), 0);

// `stats`: each choice's generation stats (generation.js), in choice order.
export function usageOf(promptTokens, completionTokens, stats) {
  const prefilled = sum(stats, (s) => s.promptTokens - s.cachedTokens);
  const prefillMs = sum(stats, (s) => s.prefillMs);
  const decodeSteps = sum(stats, (s) => Math.max(s.generated - 1, 0));
  const decodeMs = sum(stats, (s) => s.decodeMs);
  return {
    prompt_tokens: prefilled,
    completion_tokens: completionTokens,
    total_tokens: prefilled + completionTokens,
    prompt_tokens_details: { cached_tokens: stats[0]?.cachedTokens ?? 0 },
    extra: {
      prompt_tokens_total: promptTokens,
      time_to_first_token_s: seconds(stats[0]?.prefillMs ?? 0),
      prefill_tokens_per_s: prefilled / seconds(prefillMs || 1),
      decode_tokens_per_s: decodeSteps ? decodeSteps / seconds(decodeMs) : 0,
      time_per_output_token_s: decodeSteps ? seconds(decodeMs) / decodeSteps : 0,
    },
  };
}

const chatLogprobs = (entries) => ({
  content: entries.map(({ token, logprob, top }) => ({
    token, logprob, top_logprobs: (top ?? []).map((t) => ({ token: t.token, logprob: t.logprob })),
  })),
});

const textLogprobs = (entries) => ({
  tokens: entries.map((e) => e.token),
  token_logprobs: entries.map((e) => e.logprob),
  top_logprobs: entries.map((e) => Object.fromEntries((e.top ?? []).map((t) => [t.token, t.logprob]))),
});

// A token's deltas (replies.js) as one chunk delta: its reasoning, content and call entries.
function chatDelta(e) {
  if (!e.deltas) return { content: e.text };
  const content = e.deltas.map((d) => d.content ?? "").join("");
  const reasoning = e.deltas.map((d) => d.reasoning_content ?? "").join("");
  const calls = e.deltas.flatMap((d) => d.tool_calls ?? []);
  const delta = calls.length ? { ...(content ? { content } : {}), tool_calls: calls } : { content };
  return reasoning ? { reasoning_content: reasoning, ...delta } : delta;
}

// A reply's message: its parsed fields (replies.js) where it was parsed.
const chatMessage = (c) => ({ role: "assistant", ...(c.message ?? { content: c.text }) });

// endpoint -> how its objects are named and where a choice's text goes
export const FORMATS = {
  chat: {
    object: "chat.completion",
    chunkObject: "chat.completion.chunk",
    delta: (e, first) => ({ delta: { ...(first ? { role: "assistant" } : {}), ...chatDelta(e) } }),
    whole: (c) => ({ message: chatMessage(c) }),
    logprobs: chatLogprobs,
  },
  text: {
    object: "text_completion",
    chunkObject: "text_completion",
    delta: (e) => ({ text: e.text }),
    whole: (c) => ({ text: c.text }),
    logprobs: textLogprobs,
  },
};

// What identifies one response: {id, created, model, format, returnIds, promptIds}.
function envelope(meta, object, choices) {
  return { id: meta.id, object, created: meta.created, model: meta.model, choices,
           ...(meta.returnIds ? { prompt_token_ids: meta.promptIds } : {}) };
}

// One streamed chunk for one generated token of choice `e.index`.
export function chunkOf(e, meta, first) {
  const f = meta.format;
  return envelope(meta, f.chunkObject, [{
    index: e.index, ...f.delta(e, first), finish_reason: e.finish,
    logprobs: e.entry ? f.logprobs([e.entry]) : null,
    ...(meta.returnIds ? { token_ids: [e.token] } : {}),
  }]);
}

// The last chunk of a stream that asked for usage: no choices.
export const usageChunk = (meta, usage) => ({ ...envelope(meta, meta.format.chunkObject, []), usage });

// A whole response from every event of a request and its usage.
export function collect(events, meta, usage) {
  const choices = [];
  for (const e of events) {
    const c = (choices[e.index] ??= { text: "", entries: [], ids: [], finish: null, message: null });
    c.text += e.text;
    if (e.entry) c.entries.push(e.entry);
    c.ids.push(e.token);
    c.finish = e.finish ?? c.finish;
    c.message = e.message ?? c.message;
  }
  const f = meta.format;
  return { ...envelope(meta, f.object, choices.map((c, index) => ({
    index, ...f.whole(c), finish_reason: c.finish,
    logprobs: c.entries.length ? f.logprobs(c.entries) : null,
    ...(meta.returnIds ? { token_ids: c.ids } : {}),
  }))), usage };
}
