// Tools for a chat template that knows nothing of tools, as mlcx/runtime/text/tool_prompt.py:
// the tool list and the calling convention go into the first system message, an assistant's
// tool_calls become <tool_call> blocks. A template that reads `tools` renders them itself.

export const CALL_OPEN = "<tool_call>";
export const CALL_CLOSE = "</tool_call>";

const INSTRUCTIONS =
  "You can call these tools; each line is one tool's JSON description:\n{tools}\n\n" +
  "To call tools, reply with one block per call and nothing else, each block holding a " +
  'JSON object with the tool\'s "name" and its "arguments":\n' +
  `${CALL_OPEN}\n{"name": "<tool name>", "arguments": {<arguments>}}\n${CALL_CLOSE}`;

// Python's json.dumps spacing (", " and ": "), so both sides render the same prompt.
export function pyJson(value) {
  if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

const callBlock = (name, args) => `${CALL_OPEN}\n${pyJson({ name, arguments: args })}\n${CALL_CLOSE}`;

function plain(message) {
  if (!message.tool_calls?.length) return message;
  const blocks = message.tool_calls.map((c) => callBlock(c.function.name, parsedArguments(c.function.arguments)));
  return { role: message.role, content: (message.content ? [message.content, ...blocks] : blocks).join("\n") };
}

const parsedArguments = (args) => (typeof args !== "string" ? args : args.trim() ? JSON.parse(args) : {});

export function withGenericTools(messages, tools) {
  const out = messages.map(plain);
  if (!tools?.length) return out;
  const instructions = INSTRUCTIONS.replace("{tools}", tools.map(pyJson).join("\n"));
  if (out[0].role === "system") return [{ ...out[0], content: `${out[0].content}\n\n${instructions}` }, ...out.slice(1)];
  return [{ role: "system", content: instructions }, ...out];
}

// Messages as templates read them (chat_template.py validate_messages): an assistant's call
// arguments parsed from OpenAI's JSON text, a tool-calling turn's missing content "", its
// reasoning_content also as `thinking` (gpt-oss's templates read it there).
const withThinking = (m) => (m.role === "assistant" && typeof m.reasoning_content === "string" && !("thinking" in m)
  ? { ...m, thinking: m.reasoning_content } : m);

export function templateMessages(messages) {
  return messages.map(withThinking).map((m) => {
    if (!m.tool_calls?.length) return m;
    const calls = m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: parsedArguments(c.function.arguments ?? {}) } }));
    return { ...m, content: m.content ?? "", tool_calls: calls };
  });
}
