// A chat request's `tools` with tool_choice "auto": each choice's text goes through a
// ToolReply (tool_calls.js), so deltas carry content or tool_calls, a reply of calls ends with
// finish_reason "tool_calls", and its whole message has the calls and null content.
// "required" and a named function need the output constrained to a call, which needs a
// grammar engine the browser runtime does not have yet: they are refused.

import { InvalidRequestError } from "./errors.js";
import { ToolReply } from "./tool_calls.js";

// tool_choice -> whether the reply is parsed for calls
const CHOICES = { auto: true, none: false };

// Whether this request's replies are parsed for calls; refuses what needs constraining.
export function parsesToolCalls({ tools, tool_choice: choice }) {
  if (!tools?.length) {
    if (choice !== undefined && choice !== null && choice !== "none") {
      throw new InvalidRequestError("tool_choice needs tools; give the tools it may call", "tool_choice");
    }
    return false;
  }
  const key = choice ?? "auto";
  if (!(key in CHOICES)) {
    throw new InvalidRequestError(
      `tool_choice ${JSON.stringify(choice)} needs the output constrained to a call, which the browser ` +
      'runtime cannot do yet (no grammar engine); use "auto" or "none"', "tool_choice");
  }
  return CHOICES[key];
}

// Events with `deltas` ({content} / {tool_calls}) and, on a choice's last, its `calls`.
export async function* withToolCalls(events) {
  const replies = [];
  for await (const e of events) {
    if (e.usage) {
      yield e;
      continue;
    }
    const reply = (replies[e.index] ??= new ToolReply());
    const deltas = [...reply.feed(e.text), ...(e.finish ? reply.finish() : [])];
    const called = e.finish && reply.called;
    yield { ...e, deltas, ...(called ? { calls: reply.scanner.calls, finish: finishOf(e.finish) } : {}) };
  }
}

// A reply of calls that ended on its own says so; one cut by max_tokens stays "length".
const finishOf = (finish) => (finish === "stop" ? "tool_calls" : finish);
