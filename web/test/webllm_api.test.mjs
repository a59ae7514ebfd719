// WebLLM's semantics on a fake model (fake_model.mjs): model ids through appConfig, the engine
// config honoured, getMessage, usage as WebLLM counts it, runtimeStatsText, echo,
// forwardTokensAndSample, chat options, logit processors, several models in one engine, and
// unload() aborting a running load; plus the integrity checks' hashes.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import {
  CreateMLCEngine, MLCEngine, artifactUrlOf, isValidSRI, verifyIntegrity,
} from "../src/index.js";
import { VOCAB, fakeEngine } from "./fake_model.mjs";

const ask = (content, extra = {}) => ({ messages: [{ role: "user", content }], temperature: 0, ...extra });

async function drain(stream, onChunk = () => {}) {
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    await onChunk(chunks);
  }
  return chunks;
}

test("a record's model URL as WebLLM writes it names the artifact's folder", () => {
  const page = "https://app.test/chat/index.html";
  assert.equal(artifactUrlOf("https://huggingface.co/mlc-ai/Llama-MLC", page), "https://huggingface.co/mlc-ai/Llama-MLC/resolve/main/");
  assert.equal(artifactUrlOf("https://huggingface.co/org/m/resolve/v2/", page), "https://huggingface.co/org/m/resolve/v2/");
  assert.equal(artifactUrlOf("/artifacts/tiny", page), "https://app.test/artifacts/tiny/");
  assert.equal(artifactUrlOf("https://cdn.test/models/tiny/", page), "https://cdn.test/models/tiny/");
});

test("a model id resolves through the engine config's appConfig; an unknown one is refused by name", async () => {
  const seen = [];
  const loadModel = async (url) => {
    seen.push(url);
    throw Object.assign(new Error("stop here"), { name: "Stop" });
  };
  const appConfig = { model_list: [{ model: "https://models.test/tiny", model_id: "tiny-q0f32" }] };
  await assert.rejects(CreateMLCEngine("tiny-q0f32", { appConfig, loadModel }), { name: "Stop" });
  assert.deepEqual(seen, ["https://models.test/tiny/"]);
  await assert.rejects(CreateMLCEngine("Llama-3.1-8B-Instruct-q4f32_1-MLC", { appConfig, loadModel }),
    { name: "ModelNotFoundError", message: /not in appConfig.model_list \(it has "tiny-q0f32"\)/ });
});

test("the constructor's config is honoured: progress callback, setters, log level", async () => {
  const reports = [];
  const engine = await fakeEngine({}, { initProgressCallback: (r) => reports.push(r.text) });
  assert.deepEqual(reports, ["loaded http://models.test/fake/"]);
  const other = (r) => reports.push(r);
  engine.setInitProgressCallback(other);
  assert.equal(engine.getInitProgressCallback(), other);
  assert.throws(() => new MLCEngine({ logLevel: "LOUD" }), { name: "InvalidRequestError", message: /TRACE, DEBUG, INFO, WARN, ERROR, SILENT/ });
  engine.setLogLevel("SILENT");
  engine.setLogLevel("WARN");
});

test("getMessage is the last reply's text, and the stream's text so far", async () => {
  const engine = await fakeEngine();
  await assert.rejects(new MLCEngine().getMessage(), { name: "EngineNotLoadedError" });
  const reply = await engine.chat.completions.create(ask("hello", { max_tokens: 6, n: 2, temperature: 1, seed: 5 }));
  assert.equal(await engine.getMessage(), reply.choices[1].message.content); // the last choice
  const seen = [];
  const chunks = await drain(await engine.chat.completions.create(ask("abc", { max_tokens: 5, stream: true })),
    async (so) => seen.push([so.map((c) => c.choices[0]?.delta.content ?? "").join(""), await engine.getMessage()]));
  for (const [streamed, message] of seen) assert.equal(message, streamed);
  assert.equal(await engine.getMessage(), chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""));
});

test("usage as WebLLM counts it: prompt_tokens is what this turn prefilled", async () => {
  const engine = await fakeEngine();
  const messages = [{ role: "user", content: "abcdefghijklmnop" }];
  const first = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 3 });
  messages.push(first.choices[0].message, { role: "user", content: "more" });
  const second = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 3 });
  const { usage } = second;
  const whole = usage.extra.prompt_tokens_total; // OpenAI's prompt_tokens
  assert.ok(usage.prompt_tokens_details.cached_tokens >= 16);
  assert.equal(usage.prompt_tokens, whole - usage.prompt_tokens_details.cached_tokens);
  assert.ok(usage.prompt_tokens < first.usage.prompt_tokens); // WebLLM's multi-round check
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  assert.equal(first.usage.prompt_tokens, first.usage.extra.prompt_tokens_total);
});

test("runtimeStatsText sums the speeds until resetChat, which keepStats keeps", async () => {
  const engine = await fakeEngine();
  assert.equal(await engine.runtimeStatsText(), "prefill: 0.0000 tokens/sec, decoding: 0.0000 tokens/sec");
  await engine.chat.completions.create(ask("hello", { max_tokens: 4 }));
  const text = await engine.runtimeStatsText();
  assert.match(text, /^prefill: \d+\.\d{4} tokens\/sec, decoding: \d+\.\d{4} tokens\/sec$/);
  assert.notEqual(text, "prefill: 0.0000 tokens/sec, decoding: 0.0000 tokens/sec");
  await engine.resetChat(true);
  assert.equal(await engine.runtimeStatsText(), text);
  await engine.resetChat();
  assert.equal(await engine.runtimeStatsText(), "prefill: 0.0000 tokens/sec, decoding: 0.0000 tokens/sec");
});

test("echo puts the prompt before each completion, whole and streamed", async () => {
  const engine = await fakeEngine();
  const plain = await engine.completions.create({ prompt: "abc", max_tokens: 3, temperature: 0, n: 2 });
  const echoed = await engine.completions.create({ prompt: "abc", max_tokens: 3, temperature: 0, n: 2, echo: true });
  assert.deepEqual(echoed.choices.map((c) => c.text), plain.choices.map((c) => `abc${c.text}`));
  const chunks = await drain(await engine.completions.create({ prompt: [1, 2, 3], max_tokens: 3, temperature: 0, echo: true, stream: true }));
  assert.equal(chunks.map((c) => c.choices[0].text).join(""), `abc${plain.choices[0].text}`);
});

// The fake model's greedy next token after token `last` at position `pos` (fake_model.mjs).
const nextOf = (last, pos) => 1 + ((last * 7 + pos) % 26);

test("forwardTokensAndSample feeds a sequence token by token until resetChat", async () => {
  const engine = await fakeEngine({}, {});
  await engine.reload("fake", { temperature: 0 });
  let token = await engine.forwardTokensAndSample([3, 9, 4], true);
  assert.equal(token, nextOf(4, 2));
  const tokens = [token];
  for (let pos = 3; pos < 8; pos++) tokens.push((token = await engine.forwardTokensAndSample([token], false)));
  assert.deepEqual(tokens.slice(1), tokens.slice(0, -1).map((t, i) => nextOf(t, 3 + i)));
  await engine.resetChat();
  assert.equal(await engine.forwardTokensAndSample([4], true), nextOf(4, 0));
  await assert.rejects(engine.forwardTokensAndSample([VOCAB], false), { name: "InvalidRequestError", param: "inputIds" });
  assert.equal(engine.kvUsage().usedBlocks, 1);
  await engine.chat.completions.create(ask("hi", { max_tokens: 2 })); // a request ends the sequence
  assert.equal(engine.kvUsage().usedBlocks, 0);
});

test("chat options: sampling defaults under the request's own, a smaller context window", async () => {
  const engine = await fakeEngine({ contextWindow: 64 });
  await engine.reload("fake", { temperature: 0, context_window_size: 32 });
  const greedy = await engine.chat.completions.create({ messages: [{ role: "user", content: "hello" }], max_tokens: 4, return_token_ids: true });
  const explicit = await engine.chat.completions.create(ask("hello", { max_tokens: 4, return_token_ids: true }));
  assert.deepEqual(greedy.choices, explicit.choices);
  await assert.rejects(engine.chat.completions.create(ask("x", { max_tokens: 30 })), { name: "ContextWindowSizeExceededError", message: /at most/ });
  await assert.rejects(engine.reload(["fake", "fake"]), { name: "ReloadArgumentError" });
  await assert.rejects(engine.reload(["fake"], [{}, {}]), { name: "ReloadArgumentError" });
});

test("a logit processor sees every step's logits and sampled token, and steers them", async () => {
  const calls = { logits: 0, tokens: [], reset: 0 };
  const processor = {
    processLogits: (logits) => {
      calls.logits += 1;
      return logits.map((v, i) => (i === 5 ? 100 : v));
    },
    processSampledToken: (token) => calls.tokens.push(token),
    resetState: () => (calls.reset += 1),
  };
  const engine = await fakeEngine({}, { logitProcessorRegistry: new Map([["fake", processor]]) });
  const reply = await engine.chat.completions.create(ask("hello", { max_tokens: 4, return_token_ids: true }));
  assert.deepEqual(reply.choices[0].token_ids, [5, 5, 5, 5]);
  assert.deepEqual([calls.logits, calls.tokens], [4, [5, 5, 5, 5]]);
  assert.equal(await engine.forwardTokensAndSample([1, 2], true), 5);
  await engine.resetChat();
  assert.equal(calls.reset, 1);
});

test("several models in one engine: a request names its model, or is refused by name", async () => {
  const engine = await fakeEngine();
  const { runner, codec } = engine.core;
  engine.loadOptions.loadModel = async () => ({ runner, codec, vision: null, task: "generate" });
  engine.setAppConfig({ model_list: ["a", "b"].map((id) => ({ model: `https://m.test/${id}`, model_id: id })) });
  await engine.reload(["a", "b"], [{ temperature: 0 }, { temperature: 0 }]);
  await assert.rejects(engine.chat.completions.create(ask("hi")), { name: "UnclearModelToUseError" });
  await assert.rejects(engine.chat.completions.create(ask("hi", { model: "c" })), { name: "SpecifiedModelNotFoundError" });
  const a = await engine.chat.completions.create(ask("hi", { model: "a", max_tokens: 3 }));
  await engine.chat.completions.create(ask("other", { model: "b", max_tokens: 2 }));
  assert.equal(a.model, "a");
  assert.equal(await engine.getMessage("a"), a.choices[0].message.content);
  await assert.rejects(engine.getMessage(), { name: "UnclearModelToUseError" });
});

test("unload() during a load aborts it: the load resolves, no model is loaded, progress stops", async () => {
  const reports = [];
  let started;
  const begun = new Promise((resolve) => (started = resolve));
  const loadModel = (url, { signal, initProgressCallback }) => new Promise((resolve, reject) => {
    initProgressCallback({ progress: 0.1, timeElapsed: 0, text: "downloading" });
    const timer = setTimeout(() => resolve({ task: "generate" }), 10_000);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
    started();
  });
  const appConfig = { model_list: [{ model: "https://m.test/big", model_id: "big" }] };
  const engine = new MLCEngine({ appConfig, loadModel, initProgressCallback: (r) => reports.push(r.text) });
  const loading = engine.reload("big");
  await begun;
  await engine.unload();
  await loading; // resolves, as WebLLM's reload does when unload() aborts it
  assert.deepEqual(reports, ["downloading"]);
  await assert.rejects(engine.chat.completions.create(ask("hi")), { name: "EngineNotLoadedError" });
});

test("a load that fails for another reason rejects with that error", async () => {
  const appConfig = { model_list: [{ model: "https://m.test/x", model_id: "x" }] };
  const loadModel = async () => {
    throw Object.assign(new Error("no such file"), { name: "HttpError" });
  };
  await assert.rejects(CreateMLCEngine("x", { appConfig, loadModel }), { name: "HttpError" });
});

const sri = (algorithm, bytes) => `${algorithm}-${createHash(algorithm).update(bytes).digest("base64")}`;

test("integrity: SRI hashes verified, a mismatch an IntegrityError or a warning", async () => {
  const bytes = new TextEncoder().encode('{"model_name": "tiny"}');
  for (const algorithm of ["sha256", "sha384", "sha512"]) {
    assert.ok(isValidSRI(sri(algorithm, bytes)));
    await verifyIntegrity(bytes, sri(algorithm, bytes), "mlcx-config.json");
  }
  assert.ok(!isValidSRI("sha256-abc") && !isValidSRI("md5-AAAA"));
  const wrong = sri("sha256", new TextEncoder().encode("other"));
  await assert.rejects(verifyIntegrity(bytes, wrong, "https://m.test/mlcx-config.json"),
    { name: "IntegrityError", message: /integrity check failed for https:\/\/m.test\/mlcx-config.json/ });
  await verifyIntegrity(bytes, wrong, "https://m.test/mlcx-config.json", "warn");
  await assert.rejects(verifyIntegrity(bytes, "sha1-xx", "u"), /invalid integrity hash/);
});
