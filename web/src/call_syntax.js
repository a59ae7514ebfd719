// The syntax a model writes tool calls in, told by its chat template, as
// mlcx/runtime/openai_api/call_syntax.py tells it: the JSON object in a <tool_call> block
// (tool_calls.js) or Qwen3.5's XML (xml_calls.js).

import { CallScanner } from "./tool_calls.js";
import { XmlCallScanner } from "./xml_calls.js";

// a syntax -> (the tools' argument schemas) -> (a reply's call list) -> its scanner
export const SYNTAXES = {
  json: () => (calls) => new CallScanner(calls),
  xml: (parameters) => (calls) => new XmlCallScanner(calls, parameters),
};
const XML_MARKS = ["<function=", "<parameter="];

export function detectSyntax(chatTemplate) {
  const xml = typeof chatTemplate === "string" && XML_MARKS.every((m) => chatTemplate.includes(m));
  return xml ? "xml" : "json";
}
