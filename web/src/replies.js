// Each chat choice's reply as OpenAI deltas, as mlcx/server/reply.py builds them: its text goes
// through the reply format's parser (reasoning.js); reasoning becomes {reasoning_content},
// calls the format marks (harmony's) {tool_calls}, and content {content}, through the
// tool-call parser of the model's syntax (call_syntax.js) when the request's tools are parsed. Both kinds of call
// join one list; a reply that called tools and ended on its own ends with "tool_calls".

import { SYNTAXES, detectSyntax } from "./call_syntax.js";
import { replyParser } from "./reasoning.js";
import { ToolReply, extendCall, startCall } from "./tool_calls.js";

const TEXT_FIELDS = ["content", "reasoning_content"];

// Adjacent text deltas of one field as one.
function joined(parts) {
  const out = [];
  for (const part of parts) {
    const keys = Object.keys(part);
    const last = out.at(-1);
    if (keys.length === 1 && TEXT_FIELDS.includes(keys[0]) && last && Object.keys(last).join() === keys[0]) {
      out[out.length - 1] = { [keys[0]]: last[keys[0]] + part[keys[0]] };
    } else out.push(part);
  }
  return out;
}

export class ChoiceReply {
  // `tools`: the request's toolPlan (tool_events.js) or null; `syntax`: the one the model writes
  // calls in (call_syntax.js).
  constructor(parser, tools = null, syntax = "json") {
    this.parser = parser;
    this.calls = [];
    const scanner = SYNTAXES[syntax](tools?.parameters ?? {});
    this.textCalls = tools?.parse ? new ToolReply(tools.constraint !== null, this.calls, scanner) : null;
    this.indices = new Map(); // the format's call index -> its index in `calls`
    this.text = { content: "", reasoning_content: "" };
  }

  get called() {
    return this.calls.length > 0;
  }

  feed(text) {
    return this.record(this.parts(this.parser.feed(text)));
  }

  finish() {
    return this.record(joined([...this.parts(this.parser.finish()), ...(this.textCalls?.finish() ?? [])]));
  }

  // The whole reply as a message's fields: content null when it holds calls and nothing else.
  message() {
    const { content, reasoning_content: reasoning } = this.text;
    return {
      content: content || !this.called ? content : null,
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      ...(this.called ? { tool_calls: this.calls } : {}),
    };
  }

  record(parts) {
    for (const p of parts) for (const k of TEXT_FIELDS) this.text[k] += p[k] ?? "";
    return parts;
  }

  parts(events) {
    return joined(events.flatMap((e) => this[e.type](e)));
  }

  reasoning(e) {
    return [{ reasoning_content: e.text }];
  }

  content(e) {
    return this.textCalls ? this.textCalls.feed(e.text) : [{ content: e.text }];
  }

  call(e) {
    this.indices.set(e.index, this.calls.length);
    return [{ tool_calls: [startCall(this.calls, e.name)] }];
  }

  arguments(e) {
    return [{ tool_calls: [extendCall(this.calls, this.indices.get(e.index), e.text)] }];
  }
}

// Events of a chat request with `deltas` and, on a choice's last, its `message` fields; the
// usage event passes through. `format`: reasoning.js's, `tools`: the request's toolPlan.
export async function* withReplies(events, { format, codec, promptIds, tools = null }) {
  const replies = [];
  const syntax = detectSyntax(codec.meta?.chat_template);
  for await (const e of events) {
    if (e.usage) {
      yield e;
      continue;
    }
    const reply = (replies[e.index] ??= new ChoiceReply(replyParser(format, codec, promptIds), tools, syntax));
    const deltas = [...reply.feed(e.text), ...(e.finish ? reply.finish() : [])];
    if (!e.finish) yield { ...e, deltas };
    else yield { ...e, deltas, message: reply.message(), finish: reply.called && e.finish === "stop" ? "tool_calls" : e.finish };
  }
}
