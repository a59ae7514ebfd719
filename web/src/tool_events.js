// A chat request's `tools`, `tool_choice` and `parallel_tool_calls`, as mlcx/server/tools.py
// plans them: "none" leaves the reply as content; "auto" parses a reply that begins with
// <tool_call> for calls; "required" and a named function constrain the output to calls
// (constraint.js): one {"name", "arguments"} object, or with "required" and parallel calls (the
// default) a JSON array of them. Each choice's content goes through a ToolReply (tool_calls.js)
// inside its ChoiceReply (replies.js): a reply of calls ends with finish_reason "tool_calls".

import { jsonConstraint } from "./constraint_request.js";
import { InvalidRequestError } from "./errors.js";

const PARAM = "tool_choice";
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const NO_ARGUMENTS = { type: "object", properties: {} };

export const callSchema = (name, parameters) => ({
  type: "object", properties: { name: { const: name }, arguments: parameters },
  required: ["name", "arguments"], additionalProperties: false,
});

function required(parameters, parallel) {
  const calls = Object.entries(parameters).map(([name, schema]) => callSchema(name, schema));
  const one = calls.length === 1 ? calls[0] : { anyOf: calls };
  return parallel ? { type: "array", items: one, minItems: 1 } : one;
}

// tool_choice -> the schema it constrains the output to (null: unconstrained)
const CHOICES = { none: () => null, auto: () => null, required };

// name -> its arguments' JSON schema, each tool checked.
function parametersOf(tools) {
  const parameters = {};
  tools.forEach((tool, i) => {
    const name = tool?.function?.name;
    if (typeof name !== "string" || !NAME.test(name)) {
      throw new InvalidRequestError(`tools[${i}].function.name must be 1 to 64 letters, digits, _ or -, got ${JSON.stringify(name)}`, `tools.${i}.function.name`);
    }
    if (Object.hasOwn(parameters, name)) throw new InvalidRequestError(`tools has two functions named ${JSON.stringify(name)}`, `tools.${i}`);
    const schema = tool.function.parameters ?? NO_ARGUMENTS;
    if (typeof schema !== "object" || (schema.type ?? "object") !== "object") {
      throw new InvalidRequestError(`tools[${i}].function.parameters must be a JSON schema of type object`, `tools.${i}.function.parameters`);
    }
    parameters[name] = schema;
  });
  return parameters;
}

function forcedSchema(choice, parameters, parallel) {
  if (typeof choice === "string" && Object.hasOwn(CHOICES, choice)) return CHOICES[choice](parameters, parallel);
  const name = choice?.type === "function" ? choice.function?.name : undefined;
  if (typeof name !== "string") {
    throw new InvalidRequestError(`tool_choice must be one of ${Object.keys(CHOICES).join(", ")} or ` +
      `{"type": "function", "function": {"name": ...}}, got ${JSON.stringify(choice)}`, PARAM);
  }
  if (!Object.hasOwn(parameters, name)) {
    throw new InvalidRequestError(`tool_choice names ${JSON.stringify(name)}, which is not in tools (${Object.keys(parameters).join(", ")})`, PARAM);
  }
  return callSchema(name, parameters[name]);
}

// -> {parse: whether replies are parsed for calls, constraint: the forced calls' or null,
//     parameters: each tool's arguments schema, by name}
export function toolPlan({ tools, tool_choice: choice, parallel_tool_calls: parallel = true }) {
  if (tools === undefined || tools === null) {
    if (choice !== undefined && choice !== null && choice !== "none") {
      throw new InvalidRequestError("tool_choice needs tools; give the tools it may call", PARAM);
    }
    return { parse: false, constraint: null, parameters: {} };
  }
  if (!Array.isArray(tools) || !tools.length) throw new InvalidRequestError("tools is empty; give at least one tool or leave tools out", "tools");
  const parameters = parametersOf(tools);
  const schema = forcedSchema(choice ?? "auto", parameters, parallel !== false);
  return { parse: choice !== "none", constraint: schema && jsonConstraint(schema, PARAM), parameters };
}
