// The chat page, a client of the library's API (index.js): loads the artifact served next to
// it (./artifact/, or ?artifact=URL), or in an app one model of its app config
// (?app=mlcx-app.json&model=ID, see app.js), streams replies into the chat box and shows tok/s;
// for a model with an image encoder, an image picker attaches an image to the next message
// (an image_url part with a data: URL). `window.mlcx` is the hook the end-to-end tests,
// `mlcx bench web` and the native app shells use: {ready, chat(text, options),
// bench(promptIds, decodeTokens), reset(), info, lastReply}; the shells also get events
// (bridge.js). ?composer=native hides the page's input row when the app draws its own; the
// app's picker then sends its image as chat's `image` option (a data: URL), offered where
// info.images (the ready event's `images`) says the model takes images.

import { appModel } from "./app.js";
import { notify } from "./bridge.js";
import { CreateMLCEngine } from "./index.js";

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

function onProgress(report) {
  notify({ type: "status", ...report });
  if (report.adapter) $("model").dataset.adapter = report.adapter;
  $("progress").textContent = report.text;
}

function bubble(role, text = "", imageUrl = null) {
  const div = document.createElement("div");
  div.className = `msg ${role}`;
  div.textContent = text;
  if (imageUrl) div.prepend(Object.assign(document.createElement("img"), { src: imageUrl, alt: "attached image" }));
  $("chat").append(div);
  return div;
}

// The picked image as a data: URL (cleared once sent), or null.
async function takeImage() {
  const [file] = $("image").files;
  if (!file) return null;
  $("image").value = "";
  $("image-pick").classList.remove("chosen");
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

function speedNote(usage) {
  const { prompt_tokens: p, completion_tokens: n, extra } = usage;
  return `${n} tokens · prefill ${p} in ${extra.time_to_first_token_s.toFixed(2)} s · ` +
    `decode ${extra.decode_tokens_per_s.toFixed(2)} tok/s`;
}

// image: a data: URL the native shells picked, else the page's picker's.
async function chat(text, options, image = null) {
  setState("generating");
  const imageUrl = image ?? (await takeImage());
  const content = imageUrl ? [{ type: "text", text }, { type: "image_url", image_url: { url: imageUrl } }] : text;
  history.push({ role: "user", content });
  bubble("user", text, imageUrl);
  const out = bubble("assistant");
  const request = { messages: history, stream: true, stream_options: { include_usage: true },
                    return_token_ids: true, ...options };
  const tokenIds = [];
  let promptIds = null;
  let reply = "";
  let usage = null;
  for await (const chunk of await engine.chat.completions.create(request)) {
    promptIds ??= chunk.prompt_token_ids;
    usage = chunk.usage ?? usage;
    for (const choice of chunk.choices) {
      tokenIds.push(...choice.token_ids);
      reply += choice.delta.content;
      out.textContent = reply;
      notify({ type: "token", token: choice.token_ids[0], text: choice.delta.content });
    }
  }
  history.push({ role: "assistant", content: reply });
  const stats = { tokPerS: usage.extra.decode_tokens_per_s, usage };
  $("speed").textContent = `${stats.tokPerS.toFixed(2)} tok/s`;
  const note = document.createElement("span");
  note.className = "stats";
  note.textContent = speedNote(usage);
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
  const request = { prompt: promptIds, max_tokens: decodeTokens + 1, ignore_eos: true, temperature: 0, stream: true };
  for await (const _ of await engine.completions.create(request)) stamps.push(performance.now());
  return { adapter: window.mlcx.info.adapter, prefillTokens: promptIds.length,
           prefillSeconds: (stamps[0] - started) / 1000, decodeTokens: stamps.length - 1,
           decodeSeconds: (stamps.at(-1) - stamps[0]) / 1000 };
}

function currentOptions() {
  return { maxTokens: Number($("max-tokens").value), temperature: Number($("temperature").value),
           topP: Number($("top-p").value) };
}

// The page's and the native shells' option names -> the request's.
const requestOptions = ({ maxTokens, temperature, topP, seed }) =>
  ({ max_tokens: maxTokens, temperature, top_p: topP, seed });

function reset() {
  history.length = 0;
  $("chat").replaceChildren();
}

async function start() {
  const app = params.has("app") ? await appModel(new URL(params.get("app"), location.href), params.get("model")) : null;
  const source = app ?? { base, blocks: KV_BLOCKS };
  let adapter = null;
  const initProgressCallback = (report) => {
    adapter = report.adapter ?? adapter;
    onProgress(report);
  };
  const { shardsUrl, visionShardsUrl } = source;
  engine = await CreateMLCEngine(source.base, { initProgressCallback, kvBlocks: source.blocks, shardsUrl, visionShardsUrl });
  engine.addEventListener("error", (event) => showError(event.error));
  const { runner } = engine.core;
  const c = runner.config;
  $("model").textContent = `${c.model_name} · ${c.quantization} · ${adapter}`;
  const loaded = runner.weightsCached ? "weights loaded from the browser cache" : "ready";
  $("progress").textContent = app?.note ? `${loaded}; ${app.note}` : loaded;
  Object.assign(window.mlcx.info, { model: app?.model.id ?? c.model_name, quantization: c.quantization,
                                    kvBlocks: runner.numBlocks, adapter, note: app?.note ?? null,
                                    images: Boolean(engine.core.vision) });
  window.mlcx.engine = engine;
  $("image-pick").hidden = !engine.core.vision;
  setState("ready");
  notify({ type: "ready", ...window.mlcx.info });
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || document.body.dataset.state !== "ready") return;
  $("prompt").value = "";
  chat(text, requestOptions(currentOptions())).catch(showError);
});
$("image").addEventListener("change", () => $("image-pick").classList.toggle("chosen", $("image").files.length > 0));
$("prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) $("composer").requestSubmit();
});

// What a long-lived tab holds: the runner's pooled step buffers and, where Chromium tells, the JS heap.
function memory() {
  const pool = engine?.core?.runner.pool;
  return { poolBuffers: pool?.buffers ?? 0, poolBytes: pool?.bytes ?? 0,
           jsHeapBytes: performance.memory?.usedJSHeapSize ?? null };
}

window.mlcx = { chat: (text, options = {}) => chat(text, requestOptions({ ...currentOptions(), ...options }), options.image),
                bench, reset, memory, info: {} };
window.mlcx.ready = start().catch((err) => {
  showError(err);
  throw err;
});
