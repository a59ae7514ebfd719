// A reply split as its model writes it, as mlcx/runtime/text/reasoning does it: parsers fed
// text deltas return events ({type: "reasoning" | "content", text}, {type: "call", index, name},
// {type: "arguments", index, text}); each is made for one reply from the tail of its prompt.
// The formats (parsers in reply_parsers.js): `think` (<think>...</think>: Qwen3, DeepSeek-R1),
// `harmony` (gpt-oss's channels; its markers are special tokens, so the text is decoded with
// them kept) and `none` (all content); a model's own is found from its chat template and
// vocabulary. web/test/vectors/reasoning.json holds both languages to the same events.

import { InvalidRequestError } from "./errors.js";
import { CHANNEL, CLOSE, END, HarmonyParser, MESSAGE, OPEN, START, ThinkParser } from "./reply_parsers.js";

const content = (text) => ({ type: "content", text });

export class PlainParser {
  feed(text) {
    return text ? [content(text)] : [];
  }

  finish() {
    return [];
  }
}

// name -> {parser (prompt tail -> parser), markers (tokens the vocabulary must have),
// templateMark (what the chat template writes), keepsSpecialTokens}
export const FORMATS = {
  none: { name: "none", parser: () => new PlainParser(), markers: [], templateMark: null, keepsSpecialTokens: false },
  think: { name: "think", parser: (tail) => new ThinkParser(tail), markers: [OPEN, CLOSE], templateMark: OPEN, keepsSpecialTokens: false },
  harmony: { name: "harmony", parser: (tail) => new HarmonyParser(tail), markers: [START, CHANNEL, MESSAGE, END], templateMark: CHANNEL, keepsSpecialTokens: true },
};
export const CHOICES = ["auto", ...Object.keys(FORMATS)];
const ALIASES = { deepseek: "auto" };
const PROMPT_TAIL = 16;

// The format a model with this chat template and vocabulary (hasToken) speaks.
export function detectFormat(chatTemplate, hasToken) {
  const matches = (f) => f.templateMark !== null && typeof chatTemplate === "string" &&
    chatTemplate.includes(f.templateMark) && f.markers.every(hasToken);
  return Object.values(FORMATS).find(matches) ?? FORMATS.none;
}

// The format of a codec's model (TextCodec: its template and tokenizer.json; none for others).
export function modelFormat(codec) {
  const json = codec.tokenizerJson;
  if (!json) return FORMATS.none;
  const added = new Set((json.added_tokens ?? []).map((t) => t.content));
  const vocab = json.model?.vocab ?? {};
  return detectFormat(codec.meta?.chat_template, (t) => added.has(t) || Object.hasOwn(vocab, t));
}

// The format a request's `reasoning_format` (default "auto": the model's own) means.
export function reasoningFormat(name, codec) {
  const chosen = ALIASES[name ?? "auto"] ?? name ?? "auto";
  if (!CHOICES.includes(chosen)) {
    throw new InvalidRequestError(`reasoning_format must be one of ${CHOICES.join(", ")} (or deepseek, taken as auto), got ${JSON.stringify(name)}`, "reasoning_format");
  }
  return chosen === "auto" ? modelFormat(codec) : FORMATS[chosen];
}

// A parser for one reply to `promptIds`, primed with their tail (special tokens written out).
export const replyParser = (format, codec, promptIds) =>
  format.parser(promptIds.slice(-PROMPT_TAIL).map((id) => codec.piece(id)).join(""));

// Adjacent text events of one kind (and call) joined, empty ones dropped.
export function merged(events) {
  const out = [];
  for (const e of events) {
    const last = out.at(-1);
    if (e.type === "call") out.push(e);
    else if (!e.text) continue;
    else if (last && last.type === e.type && last.index === e.index) out[out.length - 1] = { ...last, text: last.text + e.text };
    else out.push(e);
  }
  return out;
}
