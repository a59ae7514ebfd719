// What a request says its output must match, as one {kind, spec, param} for constraint.js:
// `response_format` in OpenAI's shape ({type: "json_schema", json_schema: {name, schema}}) and
// WebLLM's ({type: "json_object", schema?}, {type: "grammar", grammar: <XGrammar EBNF>}), or a
// forced tool call (tool_events.js). Shapes are checked here, as mlcx/server/response_format.py
// checks them; whether XGrammar compiles the schema or grammar is checked when it compiles.

import { InvalidRequestError } from "./errors.js";

const PARAM = "response_format";
const ANY_OBJECT = { type: "object" };

const refuse = (message) => {
  throw new InvalidRequestError(message, PARAM);
};

// A schema given as an object or as JSON text (WebLLM's json_object takes a string).
function schemaText(schema, where) {
  let parsed = schema;
  if (typeof schema === "string") {
    try {
      parsed = JSON.parse(schema);
    } catch (err) {
      refuse(`${where} is not valid JSON: ${err.message}`);
    }
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) refuse(`${where} must be a JSON schema object`);
  return JSON.stringify(parsed);
}

export const jsonConstraint = (schema, param) => ({ kind: "json_schema", spec: JSON.stringify(schema), param });

// response_format.type -> its constraint
const FORMATS = {
  text: () => null,
  json_object: (rf) => ({ kind: "json_schema", spec: schemaText(rf.schema ?? ANY_OBJECT, "response_format.schema"), param: PARAM }),
  json_schema: (rf) => {
    const spec = rf.json_schema;
    if (!spec || typeof spec !== "object") refuse('response_format.json_schema must be an object {"name": ..., "schema": {...}}');
    if (typeof spec.name !== "string" || !spec.name) refuse("response_format.json_schema.name must be a non-empty string");
    return { kind: "json_schema", spec: schemaText(spec.schema ?? ANY_OBJECT, "response_format.json_schema.schema"), param: PARAM };
  },
  grammar: (rf) => {
    if (typeof rf.grammar !== "string" || !rf.grammar.trim()) refuse("response_format.grammar must be an EBNF grammar (XGrammar's dialect)");
    return { kind: "grammar", spec: rf.grammar, param: PARAM };
  },
};

// The constraint of `response_format`, or null.
export function formatConstraint(responseFormat) {
  if (responseFormat === undefined || responseFormat === null) return null;
  const kind = responseFormat.type;
  if (!Object.hasOwn(FORMATS, kind)) {
    refuse(`response_format.type must be one of ${Object.keys(FORMATS).join(", ")}, got ${JSON.stringify(kind)}`);
  }
  return FORMATS[kind](responseFormat);
}

// One constraint per request, as the Python server allows.
export function onlyOne(constraints) {
  const given = constraints.filter(Boolean);
  if (given.length > 1) {
    throw new InvalidRequestError(
      `a request takes one constraint; got ${given.map((c) => c.param).join(" and ")}`, given[1].param);
  }
  return given[0] ?? null;
}
