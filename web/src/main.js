// The chat page: loads the artifact served next to it (./artifact/, or ?artifact=URL), or in
// an app one model of its app config (?app=mlcx-app.json&model=ID, see app.js), streams
// replies into the chat box and shows tok/s. `window.mlcx` is the hook the end-to-end tests,
// `mlcx bench web` and the native app shells use: {ready, chat(text, options),
// bench(promptIds, decodeTokens), reset(), info, lastReply}; the shells also get events
// (bridge.js). ?composer=native hides the page's input row when the app draws its own.

import { appModel } from "./app.js";
import { notify } from "./bridge.js";
import { Engine } from "./engine.js";
import { Runner } from "./runner.js";
import { TextCodec } from "./tokenizer.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const base = new URL(params.get("artifact") ?? "artifact/", location.href);
const KV_BLOCKS = Number(params.get("kv_blocks") ?? 128);
const history = [];
if (params.get("composer") === "native") $("composer").hidden = true;
let engine = null;

function setState(state) {
  document.body.dataset.state = state;
  const busy = state !== "ready";
  $("prompt").disabled = busy;
  $("send").disabled = busy;
}

function showError(err) {
  $("error").textContent = err.message ?? String(err);
  $("error").hidden = false;
  setState("error");
  notify({ type: "error", message: $("error").textContent });
}

function onStatus(s) {
  notify({ type: "status", ...s });
  if (s.adapter) $("model").dataset.adapter = s.adapter;
  if (s.stage === "kernels" && s.total) $("progress").textContent = `compiling kernels ${s.done}/${s.total}`;
  if (s.stage === "weights") {
    const mb = (n) => (n / 2 ** 20).toFixed(1);
    const from = s.cached ? "from the browser cache" : "downloading";
    $("progress").textContent = `weights ${mb(s.done)} / ${mb(s.total)} MB (${from})`;
  }
}

function bubble(role, text = "") {
  const div = document.createElement("div");
  div.className = `msg ${role}`;
  div.textContent = text;
  $("chat").append(div);
  return div;
}

async function chat(text, options) {
  setState("generating");
  history.push({ role: "user", content: text });
  bubble("user", text);
  const out = bubble("assistant");
  const promptIds = engine.codec.chatPrompt(history);
  const tokenIds = [];
  let reply = "";
  let stats = null;
  for await (const step of engine.generate(promptIds, options)) {
    tokenIds.push(step.token);
    reply += step.text;
    stats = step.stats;
    out.textContent = reply;
    notify({ type: "token", token: step.token, text: step.text });
    $("speed").textContent = `${stats.tokPerS.toFixed(2)} tok/s`;
  }
  history.push({ role: "assistant", content: reply });
  const note = document.createElement("span");
  note.className = "stats";
  note.textContent = `${stats.generated} tokens · prefill ${stats.promptTokens - stats.cachedTokens} ` +
    `in ${(stats.prefillMs / 1000).toFixed(2)} s · decode ${stats.tokPerS.toFixed(2)} tok/s`;
  out.append(note);
  window.mlcx.lastReply = { promptIds, tokenIds, text: reply, stats };
  setState("ready");
  notify({ type: "done", text: reply, stats });
  return window.mlcx.lastReply;
}

// Prefill and decode time of the given prompt ids, outside the chat history, timed as the
// native bench times them: request to first token, then first to last token.
async function bench(promptIds, decodeTokens = 16) {
  const started = performance.now();
  const stamps = [];
  for await (const _ of engine.generate(promptIds, { maxTokens: decodeTokens + 1, ignoreEos: true })) {
    stamps.push(performance.now());
  }
  return { adapter: engine.runner.adapter, prefillTokens: promptIds.length,
           prefillSeconds: (stamps[0] - started) / 1000, decodeTokens: stamps.length - 1,
           decodeSeconds: (stamps.at(-1) - stamps[0]) / 1000 };
}

function currentOptions() {
  return { maxTokens: Number($("max-tokens").value), temperature: Number($("temperature").value),
           topP: Number($("top-p").value) };
}

function reset() {
  history.length = 0;
  $("chat").replaceChildren();
}

async function start() {
  const app = params.has("app") ? await appModel(new URL(params.get("app"), location.href), params.get("model")) : null;
  const source = app ?? { base, blocks: KV_BLOCKS };
  const [runner, codec] = await Promise.all([
    Runner.load(source.base, source.blocks, onStatus, source.shardsUrl),
    TextCodec.load(source.base),
  ]);
  engine = new Engine(runner, codec);
  const c = runner.config;
  $("model").textContent = `${c.model_name} · ${c.quantization} · ${runner.adapter}`;
  const loaded = runner.weightsCached ? "weights loaded from the browser cache" : "ready";
  $("progress").textContent = app?.note ? `${loaded}; ${app.note}` : loaded;
  Object.assign(window.mlcx.info, { model: app?.model.id ?? c.model_name, quantization: c.quantization,
                                    kvBlocks: runner.numBlocks, adapter: runner.adapter, note: app?.note ?? null });
  setState("ready");
  notify({ type: "ready", ...window.mlcx.info });
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || document.body.dataset.state !== "ready") return;
  $("prompt").value = "";
  chat(text, currentOptions()).catch(showError);
});
$("prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) $("composer").requestSubmit();
});

// What a long-lived tab holds: the runner's pooled step buffers and, where Chromium tells, the JS heap.
function memory() {
  const pool = engine?.runner.pool;
  return { poolBuffers: pool?.buffers ?? 0, poolBytes: pool?.bytes ?? 0,
           jsHeapBytes: performance.memory?.usedJSHeapSize ?? null };
}

window.mlcx = { chat: (text, options) => chat(text, { ...currentOptions(), ...options }), bench, reset, memory, info: {} };
window.mlcx.ready = start().catch((err) => {
  showError(err);
  throw err;
});
