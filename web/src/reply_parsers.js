// The reply parsers of reasoning.js, as mlcx/runtime/text/reasoning/think.py and harmony.py:
// ThinkParser for <think>...</think> (starting inside the reasoning when the prompt left <think>
// open; whitespace around the tags dropped), HarmonyParser for gpt-oss's channels (analysis is
// reasoning, final and commentary preambles content, functions.NAME recipients tool calls; a
// reply that does not start the harmony way is content). Text that may start a marker waits.

// The length of the longest suffix of `text` that is a proper prefix of one of `markers`.
function partialSuffix(text, markers) {
  let longest = 0;
  for (const m of markers) {
    for (let n = Math.min(m.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(m.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

const reasoning = (text) => ({ type: "reasoning", text });
const content = (text) => ({ type: "content", text });

export const OPEN = "<think>";
export const CLOSE = "</think>";

export class ThinkParser {
  constructor(promptTail = "") {
    this.state = promptTail.lastIndexOf(OPEN) > promptTail.lastIndexOf(CLOSE) ? "reasoningStart" : "start";
    this.held = "";
  }

  feed(text) {
    this.held += text;
    const events = [];
    while (this.held) {
      const state = this.state;
      const event = this[state]();
      if (event) events.push(event);
      if (this.state === state) break;
    }
    return events;
  }

  finish() {
    const held = this.held;
    this.held = "";
    if (this.state === "start" && held) return [content(held)];
    if (this.state === "reasoning" && held.trimEnd()) return [reasoning(held.trimEnd())];
    return [];
  }

  start() {
    const head = this.held.trimStart();
    if (head.startsWith(OPEN)) [this.held, this.state] = [head.slice(OPEN.length), "reasoningStart"];
    else if (!OPEN.startsWith(head)) this.state = "content";
  }

  reasoningStart() {
    this.held = this.held.trimStart();
    if (this.held) this.state = "reasoning";
  }

  reasoning() {
    const end = this.held.indexOf(CLOSE);
    if (end >= 0) {
      const text = this.held.slice(0, end).trimEnd();
      [this.held, this.state] = [this.held.slice(end + CLOSE.length), "contentStart"];
      return text ? reasoning(text) : null;
    }
    const keep = partialSuffix(this.held, [CLOSE]);
    const text = this.held.slice(0, this.held.length - keep).trimEnd();
    this.held = this.held.slice(text.length);
    return text ? reasoning(text) : null;
  }

  contentStart() {
    this.held = this.held.trimStart();
    if (this.held) this.state = "content";
  }

  content() {
    const held = this.held;
    this.held = "";
    return content(held);
  }
}

export const START = "<|start|>", CHANNEL = "<|channel|>", MESSAGE = "<|message|>";
export const END = "<|end|>", RETURN = "<|return|>", CALL = "<|call|>";
const BODY_ENDS = [END, CALL, RETURN, START];
const HEADER_STARTS = ["<|", "to=", " "];
const FUNCTIONS = "functions.";

// Whether the output's part of a header whose role the prompt wrote can still be one.
const plausible = (output) => !output.includes("\n") &&
  (!output || HEADER_STARTS.some((s) => s.startsWith(output) || output.startsWith(s)));

// The earliest of `markers` in `text`: [index, marker] or null.
function earliest(text, markers) {
  const found = markers.map((m) => [text.indexOf(m), m]).filter(([at]) => at >= 0);
  return found.length ? found.reduce((a, b) => (b[0] < a[0] ? b : a)) : null;
}

export class HarmonyParser {
  constructor(promptTail = "") {
    this.state = "outside";
    this.held = "";
    this.header = "";
    this.kind = "content";
    this.calls = 0;
    this.started = false;
    this.outputFrom = null;
    const start = promptTail.lastIndexOf(START);
    if (start >= 0) this.feed(promptTail.slice(start));
    this.outputFrom = this.state === "inHeader" ? this.header.length : null;
    this.started = false;
  }

  get promptBeganHeader() {
    return this.outputFrom !== null && !this.started;
  }

  feed(text) {
    this.held += text;
    const events = [];
    while (this.held) {
      const state = this.state;
      events.push(...this[state]());
      if (this.state === state) break;
    }
    return events;
  }

  finish() {
    const held = this.held;
    this.held = "";
    if (this.state === "body") return this.bodyEvents(held);
    if (this.state === "inHeader" && this.promptBeganHeader) {
      const output = (this.header + held).slice(this.outputFrom);
      return output ? [content(output)] : [];
    }
    if ((this.state === "outside" || this.state === "plain") && held.trim()) return [content(held)];
    return [];
  }

  outside() {
    const found = earliest(this.held, [START, CHANNEL]);
    if (!found) {
      const stray = this.held.slice(0, this.held.length - partialSuffix(this.held, [START, CHANNEL]));
      this.held = this.held.slice(stray.length);
      return stray.trim() ? [content(stray)] : [];
    }
    const [at, marker] = found;
    const stray = this.held.slice(0, at);
    this.header = marker === START ? "" : CHANNEL;
    [this.held, this.state] = [this.held.slice(at + marker.length), "inHeader"];
    return stray.trim() ? [content(stray)] : [];
  }

  inHeader() {
    this.header += this.held;
    this.held = "";
    const at = this.header.indexOf(MESSAGE);
    if (this.promptBeganHeader && !plausible(this.header.slice(this.outputFrom, at >= 0 ? at : undefined))) {
      [this.state, this.held] = ["plain", this.header.slice(this.outputFrom)];
      return [];
    }
    if (at < 0) return [];
    const head = this.header.slice(0, at);
    this.held = this.header.slice(at + MESSAGE.length);
    [this.state, this.started] = ["body", true];
    return this.open(head);
  }

  open(header) {
    const name = /to=([^\s<]+)/.exec(header)?.[1] ?? null;
    const channel = /<\|channel\|>\s*([^\s<]+)/.exec(header)?.[1] ?? null;
    if (name !== null && name.startsWith(FUNCTIONS) && name.length > FUNCTIONS.length) {
      this.kind = "call";
      this.calls += 1;
      return [{ type: "call", index: this.calls - 1, name: name.slice(FUNCTIONS.length) }];
    }
    this.kind = channel === "analysis" || name !== null ? "reasoning" : "content";
    return [];
  }

  body() {
    const found = earliest(this.held, BODY_ENDS);
    if (!found) {
      const text = this.held.slice(0, this.held.length - partialSuffix(this.held, BODY_ENDS));
      this.held = this.held.slice(text.length);
      return this.bodyEvents(text);
    }
    const [at, marker] = found;
    const text = this.held.slice(0, at);
    this.held = this.held.slice(at + marker.length);
    this.header = "";
    this.state = { [RETURN]: "done", [START]: "inHeader" }[marker] ?? "outside";
    return this.bodyEvents(text);
  }

  bodyEvents(text) {
    if (!text) return [];
    if (this.kind === "call") return [{ type: "arguments", index: this.calls - 1, text }];
    return [this.kind === "reasoning" ? reasoning(text) : content(text)];
  }

  plain() {
    const held = this.held;
    this.held = "";
    return [content(held)];
  }

  done() {
    this.held = "";
    return [];
  }
}
