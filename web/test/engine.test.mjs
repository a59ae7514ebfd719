// MLCEngine's request logic under node, on a fake model (fake_model.mjs): OpenAI shapes,
// usage and cached tokens, stop strings, interrupts and breaks freeing KV pages, the request
// queue, seeds and n, and the context window refusal. The browser test runs the real model.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ContextWindowSizeExceededError } from "../src/index.js";
import { fakeEngine } from "./fake_model.mjs";

const ask = (content, extra = {}) => ({ messages: [{ role: "user", content }], temperature: 0, ...extra });

async function drain(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

const text = (chunks) => chunks.flatMap((c) => c.choices.map((x) => x.delta.content)).join("");

test("a whole reply: OpenAI's shape, usage and finish_reason length", async () => {
  const engine = await fakeEngine();
  const reply = await engine.chat.completions.create(ask("hello", { max_tokens: 5 }));
  assert.equal(reply.object, "chat.completion");
  assert.equal(reply.choices[0].message.role, "assistant");
  assert.equal(reply.choices[0].finish_reason, "length");
  assert.equal(reply.usage.completion_tokens, 5);
  assert.equal(reply.usage.total_tokens, reply.usage.prompt_tokens + 5);
  assert.equal(reply.usage.prompt_tokens_details.cached_tokens, 0);
});

test("a stream says what the whole reply says, usage last", async () => {
  const engine = await fakeEngine();
  const whole = await engine.chat.completions.create(ask("hello", { max_tokens: 6 }));
  const chunks = await drain(await engine.chat.completions.create(
    ask("hello", { max_tokens: 6, stream: true, stream_options: { include_usage: true } })));
  assert.equal(chunks[0].object, "chat.completion.chunk");
  assert.equal(chunks[0].choices[0].delta.role, "assistant");
  assert.equal(text(chunks), whole.choices[0].message.content);
  assert.equal(chunks.at(-2).choices[0].finish_reason, "length");
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.equal(chunks.at(-1).usage.completion_tokens, 6);
});

test("a follow-up turn reports the prefix cache's hit as cached_tokens", async () => {
  const engine = await fakeEngine();
  const first = await engine.chat.completions.create(ask("abcdefghijkl", { max_tokens: 3 }));
  const messages = [{ role: "user", content: "abcdefghijkl" }, first.choices[0].message, { role: "user", content: "more" }];
  const second = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 3 });
  assert.ok(second.usage.prompt_tokens_details.cached_tokens >= 16, JSON.stringify(second.usage));
  await engine.resetChat();
  const again = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 3 });
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, 0);
});

test("a stop string ends the reply before it, finish_reason stop", async () => {
  const engine = await fakeEngine();
  const free = (await engine.chat.completions.create(ask("hello", { max_tokens: 12 }))).choices[0].message.content;
  const stop = free.slice(4, 6);
  const cut = await engine.chat.completions.create(ask("hello", { max_tokens: 12, stop: [stop] }));
  assert.equal(cut.choices[0].message.content, free.slice(0, free.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, "stop");
});

test("an interrupt mid-stream ends it with finish_reason abort and frees its pages", async () => {
  const engine = await fakeEngine();
  const chunks = [];
  for await (const chunk of await engine.chat.completions.create(ask("hello", { max_tokens: 40, stream: true }))) {
    chunks.push(chunk);
    if (chunks.length === 3) {
      assert.ok(engine.kvUsage().usedBlocks > 0);
      engine.interruptGenerate();
    }
  }
  assert.equal(chunks.length, 4);
  assert.equal(chunks.at(-1).choices[0].finish_reason, "abort");
  assert.equal(engine.kvUsage().usedBlocks, 0);
});

test("breaking out of a stream frees its pages", async () => {
  const engine = await fakeEngine();
  for await (const _ of await engine.chat.completions.create(ask("hello", { max_tokens: 40, stream: true }))) break;
  assert.equal(engine.kvUsage().usedBlocks, 0);
  assert.equal((await engine.chat.completions.create(ask("hi", { max_tokens: 2 }))).usage.completion_tokens, 2);
});

test("two concurrent streams do not interleave", async () => {
  const engine = await fakeEngine();
  const order = [];
  const run = async (content) => {
    for await (const chunk of await engine.chat.completions.create(ask(content, { max_tokens: 5, stream: true }))) {
      order.push(chunk.id);
    }
  };
  await Promise.all([run("first"), run("second")]);
  const [a, b] = [...new Set(order)];
  assert.deepEqual(order, [...Array(5).fill(a), ...Array(5).fill(b)]);
});

test("a seed reproduces a sampled reply; choice i of n draws from seed + i", async () => {
  const engine = await fakeEngine();
  const req = ask("hello", { temperature: 1.5, seed: 11, max_tokens: 10, n: 2, return_token_ids: true });
  const [one, two] = [await engine.chat.completions.create(req), await engine.chat.completions.create(req)];
  assert.deepEqual(one.choices, two.choices);
  assert.deepEqual(one.choices.map((c) => c.index), [0, 1]);
  assert.notDeepEqual(one.choices[0].token_ids, one.choices[1].token_ids);
  assert.equal(one.usage.completion_tokens, one.choices[0].token_ids.length + one.choices[1].token_ids.length);
});

test("logprobs name each token and its alternatives", async () => {
  const engine = await fakeEngine();
  const reply = await engine.chat.completions.create(ask("hi", { max_tokens: 3, logprobs: true, top_logprobs: 2 }));
  const [first] = reply.choices[0].logprobs.content;
  assert.equal(first.token, first.top_logprobs[0].token);
  assert.ok(first.logprob <= 0 && first.top_logprobs.length === 2);
});

test("text completions take a string or token ids", async () => {
  const engine = await fakeEngine();
  const reply = await engine.completions.create({ prompt: "abc", max_tokens: 3, temperature: 0 });
  assert.equal(reply.object, "text_completion");
  assert.equal(reply.choices[0].text.length, 3);
  const ids = await engine.completions.create({ prompt: [1, 2, 3], max_tokens: 3, temperature: 0 });
  assert.equal(ids.choices[0].text, reply.choices[0].text);
});

test("a prompt past the context window is refused by name", async () => {
  const engine = await fakeEngine({ contextWindow: 32 });
  await assert.rejects(engine.chat.completions.create(ask("x".repeat(40))), ContextWindowSizeExceededError);
  await assert.rejects(engine.chat.completions.create(ask("x", { max_tokens: 30 })), /lower max_tokens to at most/);
  await assert.rejects(engine.chat.completions.create(ask("x", { top_p: 2 })), /top_p must be/);
});

test("unload frees the model's GPU memory; requests then fail until reload", async () => {
  const engine = await fakeEngine();
  const { runner } = engine.core;
  await engine.unload();
  assert.ok(runner.disposed);
  await assert.rejects(engine.chat.completions.create(ask("hi")), { name: "EngineNotLoadedError" });
});

test("completions refuse token ids outside the vocabulary", async () => {
  const engine = await fakeEngine();
  await assert.rejects(engine.completions.create({ prompt: [1, 99] }), /token ids in \[0, 27\)/);
});

test("an image for a text-only model, or a URL that is not data:, is refused naming its part", async () => {
  const engine = await fakeEngine();
  const image = (url) => [{ type: "text", text: "what is this" }, { type: "image_url", image_url: { url } }];
  await assert.rejects(engine.chat.completions.create(ask(image("data:image/png;base64,AAAA"))),
    { name: "InvalidRequestError", param: "messages.0.content.1", message: /takes text only/ });
  engine.core.vision = {}; // past the text-only check: the URL is refused before decoding
  await assert.rejects(engine.chat.completions.create(ask(image("https://example.com/cat.png"))),
    { name: "InvalidRequestError", param: "messages.0.content.1", message: /only data: URLs/ });
  await assert.rejects(engine.chat.completions.create(ask(image("data:image/gif;base64,R0lG"))),
    { name: "InvalidRequestError", message: /image\/gif is not an image type/ });
});
