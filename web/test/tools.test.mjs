// Tool calls through the engine on a scripted model (fake_model.mjs): the reply's <tool_call>
// block becomes OpenAI tool_calls, whole and streamed; a reply without one stays content.
// How text is parsed is held to the Python server's parser by vectors.test.mjs.

import assert from "node:assert/strict";
import { test } from "node:test";

import { scriptedEngine } from "./fake_model.mjs";

const CALL = ["<tool_call>\n", '{"name": "get_weather", ', '"arguments": {"city": "Paris"}}', "\n</tool_call>"];
const TOOLS = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
const ask = (extra = {}) => ({ messages: [{ role: "user", content: "Weather?" }], tools: TOOLS, temperature: 0, ...extra });

test("a named tool call, whole: tool_calls, null content, finish_reason tool_calls", async () => {
  const engine = await scriptedEngine(CALL);
  const reply = await engine.chat.completions.create(ask());
  const [choice] = reply.choices;
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls[0].function.name, "get_weather");
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: "Paris" });
  assert.match(choice.message.tool_calls[0].id, /^call_[0-9a-f]{24}$/);
  assert.deepEqual(engine.core.codec.tools, TOOLS);
});

test("a named tool call, streamed: the whole call on the last chunk, where WebLLM puts it", async () => {
  const engine = await scriptedEngine(CALL);
  const deltas = [];
  for await (const chunk of await engine.chat.completions.create(ask({ stream: true }))) deltas.push(chunk.choices[0]);
  assert.ok(deltas.slice(0, -1).every((c) => !c.delta.tool_calls));
  const [call] = deltas.at(-1).delta.tool_calls;
  assert.equal(call.index, 0);
  assert.match(call.id, /^call_[0-9a-f]{24}$/);
  assert.deepEqual([call.type, call.function.name, call.function.arguments], ["function", "get_weather", '{"city": "Paris"}']);
  assert.equal(deltas.at(-1).finish_reason, "tool_calls");
  assert.equal(deltas.map((c) => c.delta.content ?? "").join(""), "");
});

test("a reply without a call is content", async () => {
  const engine = await scriptedEngine(["It is ", "sunny."]);
  const reply = await engine.chat.completions.create(ask());
  assert.equal(reply.choices[0].message.content, "It is sunny.");
  assert.equal(reply.choices[0].finish_reason, "stop");
});

// Qwen3.5's template teaches XML calls: the same engine reads them by the template, each value
// as its parameter's type in the request's tools.
const QWEN3_5 = { chat_template: "{{ '<tool_call>\\n<function=' + name + '>\\n<parameter=' + key + '>' }}" };
const XML_CALL = ["<tool_call>\n<function=get_weather>\n<parameter=city>\n", "Paris\n</parameter>\n",
  "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"];
const TYPED = [{ type: "function", function: { name: "get_weather", parameters: {
  type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } } } }];

test("Qwen3.5's XML call, whole and streamed: typed arguments, finish_reason tool_calls", async () => {
  const engine = await scriptedEngine(XML_CALL, QWEN3_5);
  const reply = await engine.chat.completions.create(ask({ tools: TYPED }));
  const [choice] = reply.choices;
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls[0].function.name, "get_weather");
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: "Paris", days: 3 });
  const streamed = await scriptedEngine(XML_CALL, QWEN3_5);
  const deltas = [];
  for await (const chunk of await streamed.chat.completions.create(ask({ tools: TYPED, stream: true }))) deltas.push(chunk.choices[0]);
  const [call] = deltas.at(-1).delta.tool_calls;
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris", days: 3 });
  assert.equal(deltas.at(-1).finish_reason, "tool_calls");
});
