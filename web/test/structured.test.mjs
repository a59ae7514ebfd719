// Constrained decoding through the engine on the fake model (fake_model.mjs: one letter per
// token, EOS at 0) with the real XGrammar WASM: every reply matches its grammar, a complete
// grammar ends the reply, and what XGrammar refuses is an InvalidRequestError naming why.
// The JSON and tool-call cases run in a browser on a compiled model (test_web_structured.py).

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";

import { GrammarConstraints } from "../src/constraint.js";
import { VOCAB, fakeEngine } from "./fake_model.mjs";

// XGrammar's UMD script looks for CommonJS's require and __filename under node.
globalThis.require = createRequire(import.meta.url);
globalThis.__filename = new URL("../node_modules/@mlc-ai/web-xgrammar/lib/index.js", import.meta.url).pathname;

const LETTERS = {
  model: { vocab: Object.fromEntries(Array.from({ length: 26 }, (_, i) => [String.fromCharCode(97 + i), i + 1])) },
  added_tokens: [{ id: 0, content: "</s>", special: true }],
  decoder: null,
};

async function engine() {
  const e = await fakeEngine();
  e.slots.get("fake").grammars = new GrammarConstraints(LETTERS, VOCAB, [0]);
  return e;
}

const ask = (extra) => ({ messages: [{ role: "user", content: "spell" }], max_tokens: 20, ...extra });
const GRAMMAR = { type: "grammar", grammar: 'root ::= ("ab" | "ba") [c-e]+ "z"' };

test("a grammar reply matches it and ends when the grammar is complete", async () => {
  const e = await engine();
  for (const temperature of [0, 1]) {
    const reply = await e.chat.completions.create(ask({ response_format: GRAMMAR, temperature, seed: 3 }));
    const [choice] = reply.choices;
    assert.match(choice.message.content, /^(ab|ba)[c-e]+z$/);
    assert.equal(choice.finish_reason, "stop");
    assert.equal(reply.usage.completion_tokens, choice.message.content.length);
  }
});

test("streamed, the same constraint", async () => {
  const chunks = [];
  const stream = await (await engine()).chat.completions.create(ask({ response_format: GRAMMAR, stream: true, temperature: 0 }));
  for await (const c of stream) chunks.push(c.choices[0]);
  assert.match(chunks.map((c) => c.delta.content).join(""), /^(ab|ba)[c-e]+z$/);
  assert.equal(chunks.at(-1).finish_reason, "stop");
});

test("without a constraint the fake model writes something else", async () => {
  const reply = await (await engine()).chat.completions.create(ask({ temperature: 0 }));
  assert.doesNotMatch(reply.choices[0].message.content, /^(ab|ba)[c-e]+z$/);
});

test("what XGrammar refuses, and malformed formats, are refused by name", async () => {
  const e = await engine();
  const refused = (response_format, pattern) =>
    assert.rejects(e.chat.completions.create(ask({ response_format })), (err) =>
      err.name === "InvalidRequestError" && err.param === "response_format" && pattern.test(err.message));
  await refused({ type: "grammar", grammar: "root ::= missing" }, /EBNF grammar: .*Rule "missing" is not defined/);
  await refused({ type: "json_schema", json_schema: { name: "x", schema: { type: "nope" } } }, /JSON schema: .*nope/);
  await refused({ type: "json_schema", json_schema: { schema: {} } }, /name must be a non-empty string/);
  await refused({ type: "json_object", schema: "{not json" }, /schema is not valid JSON/);
  await refused({ type: "yaml" }, /must be one of text, json_object, json_schema, grammar/);
  // the engine still answers after a refusal
  const reply = await e.chat.completions.create(ask({ response_format: GRAMMAR }));
  assert.match(reply.choices[0].message.content, /^(ab|ba)[c-e]+z$/);
});

test("tool_choice is checked as the Python server checks it; one constraint per request", async () => {
  const e = await engine();
  const tools = [{ type: "function", function: { name: "spell", parameters: { type: "object" } } }];
  await assert.rejects(e.chat.completions.create(ask({ tools, tool_choice: { type: "function", function: { name: "other" } } })),
    /names "other", which is not in tools \(spell\)/);
  await assert.rejects(e.chat.completions.create(ask({ tools, tool_choice: "required", response_format: GRAMMAR })),
    /one constraint; got response_format and tool_choice/);
  await assert.rejects(e.chat.completions.create(ask({ tools, tool_choice: "sometimes" })), /tool_choice must be one of none, auto, required/);
});

test("a length-bounded JSON string admits no raw control character", async () => {
  // raw vocabulary: id 0 EOS, then one character per token
  const chars = ["</s>", "{", "}", '"', ":", " ", "c", "\x13", "\n"];
  const json = { model: { vocab: Object.fromEntries(chars.map((c, i) => [c, i])) }, added_tokens: [{ id: 0, content: "</s>", special: true }] };
  const grammars = new GrammarConstraints(json, chars.length, [0]);
  const schema = { type: "object", properties: { c: { type: "string", maxLength: 4 } }, required: ["c"] };
  const grammar = await grammars.compile({ kind: "json_schema", spec: JSON.stringify(schema), param: "response_format" });
  const constraint = await grammars.matcher(grammar);
  for (const ch of '{"c": "') await constraint.advance(chars.indexOf(ch));
  const allowed = chars.filter((_, i) => (constraint.mask[i >>> 5] >>> (i & 31)) & 1);
  assert.deepEqual(allowed, ["{", "}", '"', ":", " ", "c"]);
  constraint.dispose();
});

test("a grammar pushed out of the compile cache stays usable while a request holds it", async () => {
  const grammars = new GrammarConstraints(LETTERS, VOCAB, [0]);
  const compile = (word) => grammars.compile({ kind: "grammar", spec: `root ::= "${word}"`, param: "response_format" });
  const held = await compile("held");
  for (let i = 0; i < 20; i++) grammars.release(await compile(`w${"abcdefghijklmnopqrst"[i]}`));
  assert.ok(![...grammars.compiled.values()].includes(held));
  const constraint = await grammars.matcher(held);
  for (const ch of "hel") assert.equal(await constraint.advance(ch.charCodeAt(0) - 96), false);
  assert.equal(await constraint.advance("d".charCodeAt(0) - 96), true); // only EOS may follow
  constraint.dispose();
  grammars.release(held);
  assert.equal(grammars.leases.has(held), false);
});
