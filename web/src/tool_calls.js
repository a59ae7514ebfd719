// Tool calls out of a reply's text, piece by piece as it streams, as mlcx/server/tool_calls.py
// finds them: a call is {"name": "...", "arguments": ...} with the name first; text around the
// calls is skipped. A reply holds calls only when it begins with <tool_call>; otherwise it is
// content, and so is a reply in which no call is found. A constrained reply is calls throughout.

import { CALL_OPEN } from "./tool_prompt.js";

const HEAD = /\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*/;

const callId = () => `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;

// Where a JSON value arriving in pieces ends (strings and nesting respected).
class ValueEnd {
  depth = 0;
  inString = false;
  escaped = false;
  started = false;

  // -> [characters of `text` in the value, whether it ended there]
  scan(text) {
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (ch === "\\") this.escaped = true;
        else if (ch === '"') this.inString = false;
        if (!this.inString && this.depth === 0) return [i + 1, true];
      } else if (ch === '"') {
        this.inString = this.started = true;
      } else if ("{[".includes(ch)) {
        this.depth += 1;
        this.started = true;
      } else if ("}]".includes(ch)) {
        if (this.depth === 0) return [i, true]; // a scalar, ended by the call's own brace
        this.depth -= 1;
        if (this.depth === 0) return [i + 1, true];
      } else if (ch === "," && this.depth === 0 && this.started) {
        return [i, true];
      } else if (ch.trim()) {
        this.started = true;
      }
    }
    return [text.length, false];
  }
}

// A call's start entry (index, id, type, name, empty arguments), the call joining `calls`: the
// reply's one list, shared with the calls a reply format marks (replies.js).
export function startCall(calls, name) {
  const call = { id: callId(), type: "function", function: { name, arguments: "" } };
  calls.push(call);
  return { index: calls.length - 1, ...structuredClone(call) };
}

// The entry of a piece of call `index`'s arguments.
export function extendCall(calls, index, part) {
  calls[index].function.arguments += part;
  return { index, function: { arguments: part } };
}

// Feeds text, returns OpenAI's tool_calls delta entries: a call's start once its name is
// complete, then its arguments as they arrive.
export class CallScanner {
  constructor(calls = []) {
    this.calls = calls;
    this.found = 0; // calls this scanner found
    this.pending = "";
    this.value = null;
  }

  feed(text) {
    this.pending += text;
    const entries = [];
    for (;;) {
      if (this.value === null) {
        const found = HEAD.exec(this.pending);
        if (!found) return entries;
        entries.push(startCall(this.calls, JSON.parse(`"${found[1]}"`)));
        this.found += 1;
        this.pending = this.pending.slice(found.index + found[0].length);
        this.value = new ValueEnd();
      }
      const [taken, ended] = this.value.scan(this.pending);
      let part = this.pending.slice(0, taken);
      this.pending = this.pending.slice(taken);
      if (!this.calls.at(-1).function.arguments) part = part.trimStart();
      if (part) entries.push(extendCall(this.calls, this.calls.length - 1, part));
      if (!ended) return entries;
      this.value = null;
    }
  }
}

// One choice's reply as OpenAI deltas: {content} or {tool_calls: [entry]}.
export class ToolReply {
  // `constrained`: the output is forced to calls (JSON, no <tool_call> block); `calls`: the
  // list its calls join; `scanner`: what finds calls in an unconstrained reply (call_syntax.js).
  constructor(constrained = false, calls = [], scanner = (list) => new CallScanner(list)) {
    this.scanner = constrained ? new CallScanner(calls) : scanner(calls);
    this.mode = constrained ? "calls" : "undecided"; // then "calls" or "content"
    this.text = "";
  }

  // Whether this reply's text held calls.
  get called() {
    return this.scanner.found > 0;
  }

  feed(text) {
    if (this.mode === "content") return text ? [{ content: text }] : [];
    this.text += text;
    if (this.mode === "undecided") {
      const head = this.text.trimStart();
      if (CALL_OPEN.startsWith(head)) return [];
      if (!head.startsWith(CALL_OPEN)) {
        this.mode = "content";
        return [{ content: this.text }];
      }
      this.mode = "calls";
      text = this.text;
    }
    return this.scanner.feed(text).map((entry) => ({ tool_calls: [entry] }));
  }

  // The held text as content when it held no call.
  finish() {
    if (this.mode === "content" || this.called || !this.text) return [];
    return [{ content: this.text }];
  }
}
