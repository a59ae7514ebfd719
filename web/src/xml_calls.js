// Tool calls in the XML syntax the chat templates of Qwen3.5 and Qwen3-Coder teach, piece by
// piece, as mlcx/runtime/openai_api/xml_calls.py reads them (the same bytes, held by
// test/vectors.test.mjs):
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
// Each <function=...> block is one call whose arguments are the JSON object of its parameters,
// each value read as the type its tool's schema gives it; sent as its closing tag arrives.

import { extendCall, startCall } from "./tool_calls.js";

const FUNCTION = /<function=([^>\n]+)>/;
const PARAMETER = /<parameter=([^>\n]+)>/;
const FUNCTION_CLOSE = "</function>";
const PARAMETER_CLOSE = "</parameter>";
const PYTHON_SCALARS = { True: "true", False: "false", None: "null" };

const string = (text) => JSON.stringify(text);

// `text` itself where it is one JSON value (kept as written), else null.
function json(text) {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  return text.trim();
}

const any = (text) => json(text) ?? PYTHON_SCALARS[text.trim()] ?? string(text);

function number(text) {
  const found = json(text);
  return found !== null && "-0123456789".includes(found[0]) ? found : string(text);
}

const READERS = {
  string,
  integer: number,
  number,
  boolean: (text) => ({ true: "true", false: "false" })[text.trim().toLowerCase()] ?? string(text),
  null: (text) => (["null", "None"].includes(text.trim()) ? "null" : string(text)),
  object: any,
  array: any,
};

// A parameter's value as JSON text of the type its schema (the parameter's own) asks for.
export function valueJson(text, schema) {
  let kind = schema?.type;
  if (Array.isArray(kind)) kind = kind.find((k) => k !== "null");
  return (Object.hasOwn(READERS, kind) ? READERS[kind] : any)(text);
}

export class XmlCallScanner {
  // `parameters`: each tool's arguments schema, by name.
  constructor(calls = [], parameters = {}) {
    this.calls = calls;
    this.parameters = parameters;
    this.found = 0;
    this.pending = "";
    this.function = null; // the open call's name
    this.written = 0; // parameters of the open call sent
  }

  feed(text) {
    this.pending += text;
    const entries = [];
    for (let entry = this.next(); entry !== null; entry = this.next()) entries.push(entry);
    return entries;
  }

  next() {
    if (this.function === null) return this.open();
    const closing = this.pending.indexOf(FUNCTION_CLOSE);
    const found = PARAMETER.exec(this.pending);
    if (found && (closing < 0 || found.index < closing)) return this.parameter(found);
    if (closing < 0) return null;
    this.pending = this.pending.slice(closing + FUNCTION_CLOSE.length);
    const part = this.written ? "}" : "{}";
    this.function = null;
    return extendCall(this.calls, this.calls.length - 1, part);
  }

  open() {
    const found = FUNCTION.exec(this.pending);
    if (!found) return null;
    this.function = found[1].trim();
    this.written = 0;
    this.pending = this.pending.slice(found.index + found[0].length);
    this.found += 1;
    return startCall(this.calls, this.function);
  }

  parameter(found) {
    const start = found.index + found[0].length;
    const end = this.pending.indexOf(PARAMETER_CLOSE, start);
    if (end < 0) return null; // the value is not complete yet
    const name = found[1].trim();
    let raw = this.pending.slice(start, end);
    if (raw.startsWith("\n")) raw = raw.slice(1);
    if (raw.endsWith("\n")) raw = raw.slice(0, -1);
    this.pending = this.pending.slice(end + PARAMETER_CLOSE.length);
    const schema = this.parameters[this.function]?.properties?.[name];
    const part = `${this.written ? ", " : "{"}${string(name)}: ${valueJson(raw, schema)}`;
    this.written += 1;
    return extendCall(this.calls, this.calls.length - 1, part);
  }
}
