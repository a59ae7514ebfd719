// Reply formats against the Python runtime's vectors (vectors/reasoning.json, written by
// tests/support/web_reasoning_vectors.py): the parsers' events at every split of each reply,
// the format found from a template and vocabulary, the OpenAI deltas and message of replies
// fed in pieces; then reasoning_content and tool_calls through the engine on a scripted model.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { FORMATS, detectFormat, merged } from "../src/reasoning.js";
import { ChoiceReply } from "../src/replies.js";
import { scriptedEngine } from "./fake_model.mjs";

const vectors = JSON.parse(readFileSync(new URL("vectors/reasoning.json", import.meta.url)));

function parse(vec, pieces) {
  const parser = FORMATS[vec.format].parser(vec.prompt_tail);
  return merged([...pieces.flatMap((p) => parser.feed(p)), ...parser.finish()]);
}

for (const [name, vec] of Object.entries(vectors.streams)) {
  test(`reply format: ${name}`, () => {
    assert.deepEqual(parse(vec, [vec.text]), vec.events);
    assert.deepEqual(parse(vec, Array.from(vec.text)), vec.events, "a character at a time");
    for (let i = 1; i < vec.text.length; i++) {
      assert.deepEqual(parse(vec, [vec.text.slice(0, i), vec.text.slice(i)]), vec.events, `split at ${i}`);
    }
  });
}

test("reply formats found from the chat template and the vocabulary", () => {
  for (const vec of vectors.detect) {
    const tokens = new Set(vec.tokens);
    assert.equal(detectFormat(vec.template, (t) => tokens.has(t)).name, vec.format, JSON.stringify(vec));
  }
});

const withoutIds = (value) => JSON.parse(JSON.stringify(value, (k, v) => (k === "id" ? undefined : v)));

for (const [name, vec] of Object.entries(vectors.replies)) {
  test(`reply deltas: ${name}`, () => {
    const tools = vec.tools ? { parse: true, constraint: null } : null;
    const reply = new ChoiceReply(FORMATS[vec.format].parser(vec.prompt_tail), tools);
    const deltas = vec.pieces.map((p) => reply.feed(p));
    deltas.at(-1).push(...reply.finish());
    assert.deepEqual(withoutIds(deltas), vec.deltas);
    assert.deepEqual(withoutIds(reply.message()), vec.message);
  });
}

const THINK = ["<think>", "\nThe user greets.", "\n</think>", "\n\nHello", " there!"];
const HARMONY = ["<|channel|>analysis<|message|>", "Need the tool.", "<|end|><|start|>assistant<|channel|>",
                 "commentary to=functions.get_weather<|message|>", '{"city": ', '"Paris"}'];
const ask = (extra) => ({ messages: [{ role: "user", content: "Hi" }], temperature: 0, ...extra });

test("a think reply through the engine: reasoning_content and content, whole and streamed", async () => {
  const whole = await (await scriptedEngine(THINK)).chat.completions.create(ask({ reasoning_format: "think" }));
  assert.deepEqual(whole.choices[0].message, { role: "assistant", content: "Hello there!", reasoning_content: "The user greets." });
  const chunks = [];
  for await (const c of await (await scriptedEngine(THINK)).chat.completions.create(ask({ reasoning_format: "think", stream: true }))) {
    chunks.push(c.choices[0]);
  }
  assert.equal(chunks.map((c) => c.delta.reasoning_content ?? "").join(""), "The user greets.");
  assert.equal(chunks.map((c) => c.delta.content ?? "").join(""), "Hello there!");
  assert.equal(chunks.at(-1).finish_reason, "stop");
});

test("a harmony call through the engine: tool_calls and finish_reason tool_calls", async () => {
  const whole = await (await scriptedEngine(HARMONY)).chat.completions.create(ask({ reasoning_format: "harmony" }));
  const [choice] = whole.choices;
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.reasoning_content, "Need the tool.");
  assert.equal(choice.message.tool_calls[0].function.name, "get_weather");
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: "Paris" });
});

test("a harmony call, streamed: reasoning as it comes, the whole call on the last chunk", async () => {
  const chunks = [];
  const engine = await scriptedEngine(HARMONY);
  for await (const c of await engine.chat.completions.create(ask({ reasoning_format: "harmony", stream: true }))) {
    chunks.push(c.choices[0]);
  }
  assert.equal(chunks.map((c) => c.delta.reasoning_content ?? "").join(""), "Need the tool.");
  assert.ok(chunks.slice(0, -1).every((c) => !c.delta.tool_calls));
  const [call] = chunks.at(-1).delta.tool_calls;
  assert.deepEqual([call.index, call.function.name, JSON.parse(call.function.arguments)], [0, "get_weather", { city: "Paris" }]);
  assert.equal(chunks.at(-1).finish_reason, "tool_calls");
});

test("reasoning_format none keeps the reply inline; an unknown one is refused", async () => {
  const whole = await (await scriptedEngine(THINK)).chat.completions.create(ask({ reasoning_format: "none" }));
  assert.deepEqual(whole.choices[0].message, { role: "assistant", content: THINK.join("") });
  await assert.rejects((await scriptedEngine(THINK)).chat.completions.create(ask({ reasoning_format: "x" })),
    (err) => err.param === "reasoning_format");
});
